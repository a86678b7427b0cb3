package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	jit := flag.String("jitconfig", "", "the just-in-time configuration (base64)")
	work := flag.Duration("work", time.Second, "how long the job's steps take")
	wait := flag.Duration("wait", 10*time.Minute, "how long to wait for a job")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *wait+*work+time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, *jit, *work, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "ghrunner:", err)
		os.Exit(1)
	}
}

// config is what the stand-in puts in a JIT configuration.
type config struct {
	RunnerID int64  `json:"runner_id"`
	Name     string `json:"name"`
	URL      string `json:"url"`
}

// run takes one job and completes it.
func run(ctx context.Context, out io.Writer, jit string, work, wait time.Duration) error {
	b, err := base64.StdEncoding.DecodeString(jit)
	if err != nil {
		return fmt.Errorf("--jitconfig: %w", err)
	}
	var c config
	if err := json.Unmarshal(b, &c); err != nil || c.URL == "" || c.RunnerID == 0 {
		return errors.New("--jitconfig holds no runner or no address")
	}
	fmt.Fprintf(out, "runner %s (%d): listening for jobs\n", c.Name, c.RunnerID)
	hc := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(wait)
	for {
		job, err := post(ctx, hc, c.URL+"/_standin/acquire", map[string]string{"jitconfig": jit})
		if err != nil {
			return err
		}
		if job != nil {
			var j struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(job, &j); err != nil {
				return err
			}
			fmt.Fprintf(out, "running job %d\n", j.ID)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(work):
			}
			if _, err := post(ctx, hc, fmt.Sprintf("%s/_standin/jobs/%d/complete", c.URL, j.ID), map[string]string{"conclusion": "success"}); err != nil {
				return err
			}
			fmt.Fprintf(out, "job %d completed: success\n", j.ID)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no job within %s", wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // GitHub's runner long-polls: a job reaches it at once
		}
	}
}

// post sends v as JSON; it returns the answer's body on 200, nil on 204.
func post(ctx context.Context, hc *http.Client, url string, v any) ([]byte, error) {
	b, _ := json.Marshal(v)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusNoContent:
		return nil, nil
	}
	return nil, fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
}
