package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyConfigFile_cases(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		args     []string
		wantErr  string
		wantName string
		wantJoin []string
		wantCPU  int
	}{
		{name: "file sets flags", file: `{"name":"host-a","join":["10.0.0.1:7946","10.0.0.2:7946"],"cpu":6}`, wantName: "host-a", wantJoin: []string{"10.0.0.1:7946", "10.0.0.2:7946"}, wantCPU: 6},
		{name: "flags win", file: `{"name":"host-a","cpu":6}`, args: []string{"--name", "host-b"}, wantName: "host-b", wantCPU: 6},
		{name: "unknown key", file: `{"nmae":"x"}`, wantErr: `unknown setting "nmae"`},
		{name: "bad value", file: `{"cpu":"many"}`, wantErr: "cpu"},
		{name: "not json", file: `name: x`, wantErr: "config file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agent.json")
			if err := os.WriteFile(p, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := newAgentCmd()
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			err := applyConfigFile(cmd.Flags(), p)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name, _ := cmd.Flags().GetString("name")
			join, _ := cmd.Flags().GetStringSlice("join")
			cpu, _ := cmd.Flags().GetInt("cpu")
			if name != c.wantName || cpu != c.wantCPU || strings.Join(join, ",") != strings.Join(c.wantJoin, ",") {
				t.Fatalf("name %q cpu %d join %v", name, cpu, join)
			}
		})
	}
}

func TestPeerConfig_cases(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "dev defaults", args: []string{"--dev", "--name", "dev-1", "--data-dir", "DATADIR"}},
		{name: "relative data dir", args: []string{"--dev", "--name", "dev-1", "--data-dir", "rel/data"}},
		{name: "bad name", args: []string{"--dev", "--name", "Bad_Name"}, wantErr: "--name"},
		{name: "bad bind", args: []string{"--bind", "nowhere", "--name", "a"}, wantErr: "--bind"},
		{name: "bad join", args: []string{"--dev", "--name", "a", "--join", "10.0.0.1"}, wantErr: "--join"},
		{name: "bad memory", args: []string{"--dev", "--name", "a", "--memory", "lots"}, wantErr: "--memory"},
		{name: "negative cpu", args: []string{"--dev", "--name", "a", "--cpu", "-2"}, wantErr: "--cpu"},
		{name: "bad domain type", args: []string{"--dev", "--name", "a", "--domain-type", "xen"}, wantErr: "--domain-type"},
		{name: "overcommit under 1", args: []string{"--dev", "--name", "a", "--cpu-overcommit", "0.5"}, wantErr: "--cpu-overcommit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			a := &agentFlags{}
			cmd := a.command()
			for i, arg := range c.args {
				if arg == "DATADIR" {
					c.args[i] = t.TempDir()
				}
			}
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := a.peerConfig(cmd.Flags())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Bind != "127.0.0.1" || cfg.BootstrapExpect != 1 || !cfg.Local || cfg.Capacity.CPU < 1 || cfg.Driver == nil || !filepath.IsAbs(cfg.DataDir) ||
				cfg.CPUOvercommit != devCPUOvercommit {
				t.Fatalf("dev config %+v", cfg)
			}
		})
	}
}

func TestConfigSet_and_client_precedence(t *testing.T) {
	t.Setenv("SVC_CONFIG", filepath.Join(t.TempDir(), "svc", "config.json"))
	t.Setenv("SVC_API_URL", "")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"config", "set", "--api-url", "http://10.0.0.20:8080"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	g := &globals{}
	cl, err := g.client()
	if err != nil || cl.BaseURL != "http://10.0.0.20:8080" {
		t.Fatalf("from file: %v %v", cl, err)
	}
	t.Setenv("SVC_API_URL", "http://127.0.0.1:9")
	if cl, _ := g.client(); cl.BaseURL != "http://127.0.0.1:9" {
		t.Fatalf("env did not override: %s", cl.BaseURL)
	}
	g.apiURL = "127.0.0.1:10"
	if cl, _ := g.client(); cl.BaseURL != "http://127.0.0.1:10" {
		t.Fatalf("flag did not override: %s", cl.BaseURL)
	}
	root = newRootCmd()
	root.SetArgs([]string{"config", "set", "--api-url", "ftp://x"})
	if err := root.Execute(); err == nil {
		t.Fatal("accepted an ftp URL")
	}
}
