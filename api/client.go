package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client is a typed client of the svc API.
type Client struct {
	// BaseURL is the API address, e.g. http://10.0.0.20:8443.
	BaseURL string
	// Token is sent as a bearer token when set.
	Token string
	// HTTP is the client used for requests; a client with a 60 s timeout when nil.
	HTTP *http.Client
	// RetryUnavailable, when positive, retries reads (GET) answered 503 with
	// Retry-After (a peer catching up, a cluster electing a leader) for up
	// to this long in all. Writes are never retried: one may have been
	// applied before its 503.
	RetryUnavailable time.Duration
}

// NewClient returns a client of the API at baseURL.
func NewClient(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: defaultHTTPTimeout}}
}

// defaultHTTPTimeout bounds a request of a client made by NewClient, or
// of one whose HTTP is nil (a call that waits on purpose, as RunVM, waits
// longer).
const defaultHTTPTimeout = 60 * time.Second

// ClusterInfo reads GET /api/v1/cluster-info.
func (c *Client) ClusterInfo(ctx context.Context) (ClusterInfo, error) {
	var out ClusterInfo
	err := c.Do(ctx, http.MethodGet, "/api/v1/cluster-info", nil, &out)
	return out, err
}

// ListNodes lists the nodes of a namespace. With consistent set, the read goes
// through the leader.
func (c *Client) ListNodes(ctx context.Context, namespace string, consistent bool) ([]Node, error) {
	p := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/nodes"
	if consistent {
		p += "?consistent=true"
	}
	var out List[Node]
	if err := c.Do(ctx, http.MethodGet, p, nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// TagNode adds a tag to a node and returns the node.
func (c *Client) TagNode(ctx context.Context, namespace, node, tag string) (Node, error) {
	return c.tagCall(ctx, namespace, node, "tag", tag)
}

// UntagNode removes a tag from a node and returns the node.
func (c *Client) UntagNode(ctx context.Context, namespace, node, tag string) (Node, error) {
	return c.tagCall(ctx, namespace, node, "untag", tag)
}

func (c *Client) tagCall(ctx context.Context, namespace, node, verb, tag string) (Node, error) {
	var out Node
	p := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/nodes/" + url.PathEscape(node) + "/" + verb
	err := c.Do(ctx, http.MethodPost, p, TagRequest{Tag: tag}, &out)
	return out, err
}

// Do sends a request with an optional JSON body and decodes a JSON answer into
// out (when out is not nil). An error answer becomes a *StatusError.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	_, err := c.DoHeader(ctx, method, path, in, out)
	return err
}

// DoHeader is Do that also returns the answer's headers.
func (c *Client) DoHeader(ctx context.Context, method, path string, in, out any) (http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.sendHeader(req, out)
}

// send sends a prepared request with the client's token and decodes the answer.
func (c *Client) send(req *http.Request, out any) error {
	_, err := c.sendHeader(req, out)
	return err
}

func (c *Client) sendHeader(req *http.Request, out any) (http.Header, error) {
	if c.RetryUnavailable <= 0 || req.Method != http.MethodGet {
		return c.sendOnce(req, out)
	}
	deadline := time.Now().Add(c.RetryUnavailable)
	for {
		h, err := c.sendOnce(req, out)
		var se *StatusError
		if !errors.As(err, &se) || se.Status.Code != http.StatusServiceUnavailable || se.RetryAfter == "" {
			return h, err
		}
		wait := time.Second
		if secs, perr := strconv.Atoi(se.RetryAfter); perr == nil && secs >= 0 {
			wait = time.Duration(secs) * time.Second
		}
		wait = max(wait, 100*time.Millisecond)
		if time.Now().Add(wait).After(deadline) {
			return h, err
		}
		select {
		case <-req.Context().Done():
			return h, err
		case <-time.After(wait):
		}
	}
}

func (c *Client) sendOnce(req *http.Request, out any) (http.Header, error) {
	method, path := req.Method, req.URL.Path
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: defaultHTTPTimeout}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.Header, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return resp.Header, decodeStatus(resp, data)
	}
	if out == nil || len(data) == 0 {
		return resp.Header, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.Header, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return resp.Header, nil
}

// stream sends a prepared request with the client's token and returns the
// answer for the caller to read (an error answer becomes a *StatusError).
func (c *Client) stream(req *http.Request) (*http.Response, error) {
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, decodeStatus(resp, data)
	}
	return resp, nil
}

// ErrNotStatus is wrapped by the error returned for an error answer that is
// not a Status body.
var ErrNotStatus = errors.New("answer is not a Status")

func decodeStatus(resp *http.Response, data []byte) error {
	var st Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		snippet := string(data)
		if len(snippet) > 500 {
			snippet = snippet[:500]
		}
		return fmt.Errorf("%s: %w: %q", resp.Status, ErrNotStatus, snippet)
	}
	return &StatusError{Status: st, RetryAfter: resp.Header.Get("Retry-After")}
}
