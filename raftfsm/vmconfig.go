package raftfsm

import (
	"maps"
	"time"

	"github.com/svc-project/svc/api"
)

// VMConfig is a template that VMs are deployed from.
type VMConfig struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Image     string `json:"image"`
	// MemoryGiB keeps what the user gave (0: the default at deploy time).
	MemoryGiB   float64 `json:"memoryGiB"`
	Scheduler   string  `json:"scheduler,omitempty"`
	Tag         string  `json:"tag,omitempty"`
	TagRequired bool    `json:"tagRequired"`
	Node        string  `json:"node,omitempty"`
	// Warm makes every node that holds the image keep a booted template
	// of the config's shape (see Shape).
	Warm bool `json:"warm,omitempty"`
	// Hot is how many guests of the config's shape each node holding its
	// template keeps restored and running, for deploys to claim (hot.go).
	Hot int `json:"hot,omitempty"`
	VMOptions
	Owner     string    `json:"owner,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func (c *VMConfig) clone() *VMConfig {
	d := *c
	d.CustomMetadata = maps.Clone(c.CustomMetadata)
	return &d
}

func (c *VMConfig) sortKey() string { return key(c.Namespace, c.Name) }

// VMConfigCreate creates a VM config.
type VMConfigCreate struct {
	Config VMConfig `json:"config"`
}

// VMConfigDelete deletes a VM config.
type VMConfigDelete struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (s *State) applyVMConfigCreate(c VMConfigCreate) (any, error) {
	cfg := c.Config.clone()
	if err := api.ValidateName("vmconfig name", cfg.Name, api.MaxVMConfigLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if err := api.ValidateMetadata(cfg.CustomMetadata); err != nil {
		return nil, ruleErr(ErrInvalid, "customMetadata: %s", err.Error())
	}
	if _, ok := s.Namespaces[cfg.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", cfg.Namespace)
	}
	// A registry reference is read at deploy.
	if _, ok := s.Images[key(cfg.Namespace, cfg.Image)]; !ok && !api.IsRegistryReference(cfg.Image) {
		return nil, ruleErr(ErrNotFound, "image %q not found in namespace %q", cfg.Image, cfg.Namespace)
	}
	if cfg.ISO != "" {
		if _, ok := s.ISOs[key(cfg.Namespace, cfg.ISO)]; !ok {
			return nil, ruleErr(ErrNotFound, "iso %q not found in namespace %q", cfg.ISO, cfg.Namespace)
		}
	}
	if cfg.Warm {
		if err := s.checkWarm(cfg); err != nil {
			return nil, err
		}
	}
	if err := checkHot(cfg); err != nil {
		return nil, err
	}
	k := key(cfg.Namespace, cfg.Name)
	if _, ok := s.VMConfigs[k]; ok {
		return nil, ruleErr(ErrAlreadyExists, "vmconfig %q already exists in namespace %q", cfg.Name, cfg.Namespace)
	}
	s.VMConfigs[k] = cfg
	return cfg.clone(), nil
}

func (s *State) applyVMConfigDelete(c VMConfigDelete) (any, error) {
	k := key(c.Namespace, c.Name)
	if _, ok := s.VMConfigs[k]; !ok {
		return nil, ruleErr(ErrNotFound, "vmconfig %q not found in namespace %q", c.Name, c.Namespace)
	}
	delete(s.VMConfigs, k)
	return nil, nil
}

func vmConfigs(s *State) map[string]*VMConfig { return s.VMConfigs }

// VMConfigs returns the VM configs of a namespace, sorted.
func (f *FSM) VMConfigs(ns string) []VMConfig {
	return list(f, vmConfigs, func(c *VMConfig) bool { return c.Namespace == ns })
}

// VMConfig returns one VM config.
func (f *FSM) VMConfig(ns, name string) (VMConfig, bool) { return get(f, vmConfigs, key(ns, name)) }
