package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// cliConfig is what the CLI keeps between runs.
type cliConfig struct {
	APIURL string `json:"apiUrl,omitempty"`
	Token  string `json:"token,omitempty"`
}

// configPath is $SVC_CONFIG, or svc/config.json in the user's config dir.
func configPath() (string, error) {
	if p := os.Getenv("SVC_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config dir: %w", err)
	}
	return filepath.Join(dir, "svc", "config.json"), nil
}

func loadConfig() (cliConfig, string, error) {
	var c cliConfig
	p, err := configPath()
	if err != nil {
		return c, "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return c, p, nil
	}
	if err != nil {
		return c, p, fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, p, fmt.Errorf("config %s: %w", p, err)
	}
	return c, p, nil
}

func saveConfig(p string, c cliConfig) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("config dir: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := writePrivate(p, append(b, '\n')); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// client builds an API client: flags win over $SVC_API_URL / $SVC_TOKEN,
// which win over the config file.
func (g *globals) client() (*api.Client, error) {
	c, _, err := loadConfig()
	if err != nil {
		return nil, err
	}
	url := first(g.apiURL, os.Getenv("SVC_API_URL"), c.APIURL)
	if url == "" {
		return nil, errors.New("no API address: run 'svc config set --api-url URL' or set SVC_API_URL")
	}
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	cl := api.NewClient(url, first(g.token, os.Getenv("SVC_TOKEN"), c.Token))
	cl.HTTP.Timeout = 2 * time.Minute
	// A peer that is catching up, or a cluster electing a leader, answers
	// reads 503 for a moment: wait it out rather than fail a script.
	cl.RetryUnavailable = 30 * time.Second
	return cl, nil
}

// clientFor checks the -o value of a listing command and builds the client.
func (g *globals) clientFor() (*api.Client, error) {
	if err := checkOutput(g.output); err != nil {
		return nil, err
	}
	return g.client()
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
