package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
)

// maxDocument bounds the documents Raw reads (the OpenAPI document, metrics).
const maxDocument = 32 << 20

// Raw reads a document the API serves as is (the OpenAPI document at
// /api/v1/openapi.json, Prometheus metrics at /metrics).
func (c *Client) Raw(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+path, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	resp, err := c.stream(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return b, nil
}

// OpenAPI reads the API's OpenAPI 3 document.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	return c.Raw(ctx, "/api/v1/openapi.json")
}

// Metrics reads a peer's Prometheus metrics.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) { return c.Raw(ctx, "/metrics") }

// ExplorerURL is where the peer serves the API explorer (a page for browsers).
func (c *Client) ExplorerURL() string { return strings.TrimRight(c.BaseURL, "/") + "/api/v1/swagger" }

// UploadCert sends the PEM certificate and key every peer then serves HTTPS
// with (admin).
func (c *Client) UploadCert(ctx context.Context, certPEM, keyPEM []byte) (Message, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct {
		field string
		data  []byte
	}{{"cert", certPEM}, {"key", keyPEM}} {
		w, err := mw.CreateFormFile(part.field, part.field+".pem")
		if err != nil {
			return Message{}, err
		}
		if _, err := w.Write(part.data); err != nil {
			return Message{}, err
		}
	}
	if err := mw.Close(); err != nil {
		return Message{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/api/v1/upload/cert", &body)
	if err != nil {
		return Message{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out Message
	return out, c.send(req, &out)
}
