package libvirt

import (
	"context"
	"encoding/json"
	"fmt"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/qga"
)

// agentCommand sends one command to the guest's agent and decodes the
// "return" of its answer into out.
func (d *Driver) agentCommand(ctx context.Context, name string, cmd any, out any) error {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	req, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("agent command for %s: %w", name, err)
	}
	answer, err := do(ctx, d, "ask the agent of "+name, func(l *golibvirt.Libvirt) (golibvirt.OptString, error) {
		return l.QEMUDomainAgentCommand(dom, string(req), agentTimeout, 0)
	})
	if err != nil {
		if isAgentError(err) {
			return fmt.Errorf("%s: %w: %v", name, hypervisor.ErrNoAgent, err)
		}
		return err
	}
	if out == nil || len(answer) == 0 {
		return nil
	}
	var r struct {
		Return json.RawMessage `json:"return"`
	}
	if err := json.Unmarshal([]byte(answer[0]), &r); err != nil {
		return fmt.Errorf("the agent of %s answered %.200q: %w", name, answer[0], err)
	}
	if err := json.Unmarshal(r.Return, out); err != nil {
		return fmt.Errorf("the agent of %s answered %.200q: %w", name, answer[0], err)
	}
	return nil
}

// agent is the guest's agent, reached through libvirt's agent call: what
// is done through it is package qga's.
func (d *Driver) agent(name string) qga.Agent {
	return qga.Agent{Name: name, Log: d.cfg.Log, Call: func(ctx context.Context, cmd, out any) error {
		return d.agentCommand(ctx, name, cmd, out)
	}}
}
