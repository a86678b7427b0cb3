package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Watch streams the events of a namespace's list (kind: "vms", "nodes",
// "images" or "jobs") to fn, from resourceVersion ("": an ADDED event per
// record first), until ctx ends, the server ends the stream (nil), or fn
// returns an error (returned). A version the server no longer has is a
// 410 StatusError: list again.
func (c *Client) Watch(ctx context.Context, namespace, kind, resourceVersion string, fn func(WatchEvent) error) error {
	q := url.Values{"watch": {"true"}}
	if resourceVersion != "" {
		q.Set("resourceVersion", resourceVersion)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+nsPath(namespace, kind)+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	// A watch lasts: the client's overall timeout, if any, is not its.
	streaming := *c
	streaming.HTTP = &http.Client{}
	if c.HTTP != nil {
		streaming.HTTP.Transport = c.HTTP.Transport
	}
	resp, err := streaming.stream(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev WatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("watch %s: a line that is not an event: %w", kind, err)
		}
		if ev.Type == "ERROR" {
			var st Status
			if json.Unmarshal(ev.Object, &st) == nil && st.Kind == "Status" {
				return &StatusError{Status: st}
			}
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sc.Err()
}
