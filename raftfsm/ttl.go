package raftfsm

import "time"

// VMExtend moves a VM's expiry (VM.ExpiresAt) later by Seconds.
type VMExtend struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Seconds   int64  `json:"seconds"`
	// Time is when the extension was asked (the leader's clock): an expiry
	// already past is extended from it.
	Time time.Time `json:"time"`
}

// MaxTTL bounds a VM's time-to-live and an extension (a year).
const MaxTTL = 365 * 24 * time.Hour

func (s *State) applyVMExtend(c VMExtend) (any, error) {
	vm, err := s.vm(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	d := time.Duration(c.Seconds) * time.Second
	if d <= 0 || d > MaxTTL {
		return nil, ruleErr(ErrInvalid, "an extension is 1s to %s, not %s", MaxTTL, d)
	}
	if vm.ExpiresAt == nil {
		return nil, ruleErr(ErrConflict, "vm %q has no time-to-live: it never expires", c.Name)
	}
	from := *vm.ExpiresAt
	if from.Before(c.Time) {
		from = c.Time
	}
	t := from.Add(d)
	if t.Sub(c.Time) > MaxTTL {
		return nil, ruleErr(ErrInvalid, "vm %q would expire more than %s from now", c.Name, MaxTTL)
	}
	vm.ExpiresAt = &t
	return vm.clone(), nil
}

// ExpiredVMs returns the VMs whose expiry is at or before now.
func (f *FSM) ExpiredVMs(now time.Time) []VM {
	return f.vmsDue(now, func(vm VM) *time.Time { return vm.ExpiresAt })
}

// StaleDeploys returns the VMs whose deploy gave up on them (DeployBy at
// or before now) before they ran.
func (f *FSM) StaleDeploys(now time.Time) []VM {
	return f.vmsDue(now, func(vm VM) *time.Time { return vm.DeployBy })
}

// vmsDue returns the VMs whose time (when set) is at or before now.
func (f *FSM) vmsDue(now time.Time, at func(VM) *time.Time) []VM {
	var out []VM
	for _, vm := range f.VMs("") {
		if t := at(vm); t != nil && !t.After(now) {
			out = append(out, vm)
		}
	}
	return out
}
