package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// GetImage reads one image.
func (c *Client) GetImage(ctx context.Context, namespace, name string) (Image, error) {
	var out Image
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "images", name), nil, &out)
	return out, err
}

// GenerateImage makes an empty qcow2 image of a virtual size ("10G").
func (c *Client) GenerateImage(ctx context.Context, namespace string, req GenerateImageRequest) (Image, error) {
	var out Image
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "images"), req, &out)
	return out, err
}

// CopyImage gives an image's content a second name.
func (c *Client) CopyImage(ctx context.Context, namespace, name string, req CopyRequest) (Image, error) {
	var out Image
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "images", name, "copy"), req, &out)
	return out, err
}

// DescribeImage sets an image's description.
func (c *Client) DescribeImage(ctx context.Context, namespace, name, description string) (Image, error) {
	var out Image
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "images", name, "description"), DescriptionRequest{Description: description}, &out)
	return out, err
}

// DeleteImage deletes an image.
func (c *Client) DeleteImage(ctx context.Context, namespace, name string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "images", name), nil, nil)
}

// DownloadImage streams an image's disk from offset on (0 for all of it)
// and returns the answer's body, the bytes it holds and the image's digest
// (its ETag). The caller closes the body.
func (c *Client) DownloadImage(ctx context.Context, namespace, name string, offset int64) (io.ReadCloser, int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+nsPath(namespace, "images", name, "download"), nil)
	if err != nil {
		return nil, 0, "", fmt.Errorf("build request: %w", err)
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := c.stream(req)
	if err != nil {
		return nil, 0, "", err
	}
	if offset > 0 && resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, 0, "", fmt.Errorf("download %s from byte %d: the server sent %s, not a part", name, offset, resp.Status)
	}
	return resp.Body, resp.ContentLength, strings.Trim(resp.Header.Get("ETag"), `"`), nil
}

// CommitVM commits a VM's disk over its image and returns the image's URL.
func (c *Client) CommitVM(ctx context.Context, namespace, vm string, req CommitRequest) (StatusURL, error) {
	var out StatusURL
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vms", vm, "commit"), req, &out)
	return out, err
}

// SaveVM saves a VM's disk as a new image and returns the image's URL.
func (c *Client) SaveVM(ctx context.Context, namespace, vm string, req SaveRequest) (StatusURL, error) {
	var out StatusURL
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vms", vm, "save"), req, &out)
	return out, err
}

// ListISOs lists the ISOs of a namespace.
func (c *Client) ListISOs(ctx context.Context, namespace string) ([]ISO, error) {
	var out List[ISO]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "isos"), nil, &out)
	return out.Items, err
}

// GetISO reads one ISO.
func (c *Client) GetISO(ctx context.Context, namespace, name string) (ISO, error) {
	var out ISO
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "isos", name), nil, &out)
	return out, err
}

// UploadISO streams an ISO of size bytes from r as a raw body.
func (c *Client) UploadISO(ctx context.Context, namespace, name string, r io.Reader, size int64) (ISO, error) {
	var out ISO
	err := c.upload(ctx, nsPath(namespace, "upload", "iso"), name, r, size, &out)
	return out, err
}

// CopyISO gives an ISO's content a second name.
func (c *Client) CopyISO(ctx context.Context, namespace, name string, req CopyRequest) (ISO, error) {
	var out ISO
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "isos", name, "copy"), req, &out)
	return out, err
}

// DescribeISO sets an ISO's description.
func (c *Client) DescribeISO(ctx context.Context, namespace, name, description string) (ISO, error) {
	var out ISO
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "isos", name, "description"), DescriptionRequest{Description: description}, &out)
	return out, err
}

// DeleteISO deletes an ISO.
func (c *Client) DeleteISO(ctx context.Context, namespace, name string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "isos", name), nil, nil)
}

// upload streams a raw body to an upload route with ?name=.
func (c *Client) upload(ctx context.Context, path, name string, r io.Reader, size int64, out any) error {
	u := strings.TrimRight(c.BaseURL, "/") + path + "?name=" + url.QueryEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, r)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	return c.send(req, out)
}

// CacheImage starts a job copying an image to the nodes req selects.
func (c *Client) CacheImage(ctx context.Context, namespace, image string, req ImageCacheRequest) (JobAccepted, error) {
	var out JobAccepted
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "images", image, "cache"), req, &out)
	return out, err
}

// ImageCache lists the nodes that hold an image and the copies under way.
func (c *Client) ImageCache(ctx context.Context, namespace, image string) (ImageCache, error) {
	var out ImageCache
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "images", image, "cache"), nil, &out)
	return out, err
}

// UncacheImage frees an image on a node.
func (c *Client) UncacheImage(ctx context.Context, namespace, image, node string) (ImageCache, error) {
	var out ImageCache
	err := c.Do(ctx, http.MethodDelete, nsPath(namespace, "images", image, "cache")+"?node="+url.QueryEscape(node), nil, &out)
	return out, err
}
