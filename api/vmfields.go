package api

import "fmt"

// Limits of the fields a deploy and a VM config share.
const (
	MaxCPU       = 256
	MaxMemoryGiB = 4096
	MaxDisplay   = 16384
	// A deploy waits at least a minute for Running: shorter, a healthy VM
	// could be removed again for being slow to start.
	MinTimeoutMinutes = 1
	MaxTimeoutMinutes = 24 * 60
)

// FieldError is a request field that breaks a rule: the API answers it
// 400 with its text, the CLI refuses it before sending.
type FieldError struct {
	Field, Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Field, e.Problem) }

func fieldErr(name, format string, args ...any) error {
	return &FieldError{Field: name, Problem: fmt.Sprintf(format, args...)}
}

// VMFields are the fields of a VM that a deploy, a VM config and the CLI
// share, as given (nil or empty: not given, the default or the config's
// applies). One rule a field: a config is refused for what a deploy from
// it would be refused for.
type VMFields struct {
	CPU                                     *int
	Memory                                  *float64 // GiB
	Scheduler, Tag                          string
	DisplayWidth, DisplayHeight, DisplayDPI *int
	CustomMetadata                          map[string]string
	// Timeout is a deploy's wait for Running, in minutes.
	Timeout *float64
}

// Validate returns a *FieldError for the first field that breaks its rule.
func (f VMFields) Validate() error {
	if f.CPU != nil && (*f.CPU < 1 || *f.CPU > MaxCPU) {
		return fieldErr("cpu", "%d is not between 1 and %d", *f.CPU, MaxCPU)
	}
	if f.Memory != nil && (*f.Memory < 0 || *f.Memory > MaxMemoryGiB) {
		return fieldErr("memory", "%g GiB is not between 0 (the default) and %d", *f.Memory, MaxMemoryGiB)
	}
	if f.Scheduler != "" && !ValidScheduler(f.Scheduler) {
		return fieldErr("scheduler", "%q is not default or most-allocated", f.Scheduler)
	}
	if f.Tag != "" {
		if err := ValidateTag(f.Tag); err != nil {
			return fieldErr("tag", "%s", err)
		}
	}
	for _, d := range []struct {
		name string
		v    *int
	}{{"displayWidth", f.DisplayWidth}, {"displayHeight", f.DisplayHeight}, {"displayDpi", f.DisplayDPI}} {
		if d.v != nil && (*d.v < 0 || *d.v > MaxDisplay) {
			return fieldErr(d.name, "%d is not between 0 and %d", *d.v, MaxDisplay)
		}
	}
	if err := ValidateMetadata(f.CustomMetadata); err != nil {
		return fieldErr("customMetadata", "%s", err)
	}
	if f.Timeout != nil && (*f.Timeout < MinTimeoutMinutes || *f.Timeout > MaxTimeoutMinutes) {
		return fieldErr("timeout", "%g minutes is not between %d and %d", *f.Timeout, MinTimeoutMinutes, MaxTimeoutMinutes)
	}
	return nil
}

// Fields returns the shared fields a deploy request gives.
func (r DeployRequest) Fields() VMFields {
	return VMFields{
		CPU: r.CPU, Memory: r.Memory, Scheduler: r.Scheduler, Tag: r.Tag,
		DisplayWidth: r.DisplayWidth, DisplayHeight: r.DisplayHeight, DisplayDPI: r.DisplayDPI,
		CustomMetadata: r.CustomMetadata, Timeout: r.Timeout,
	}
}

// Fields returns the shared fields a VM config gives (0: not given).
func (c VMConfig) Fields() VMFields {
	f := VMFields{Scheduler: c.Scheduler, Tag: c.Tag, CustomMetadata: c.CustomMetadata}
	given := func(v int) *int {
		if v == 0 {
			return nil
		}
		return &v
	}
	f.CPU, f.DisplayWidth, f.DisplayHeight, f.DisplayDPI = given(c.CPU), given(c.DisplayWidth), given(c.DisplayHeight), given(c.DisplayDPI)
	if c.Memory != 0 {
		m := c.Memory
		f.Memory = &m
	}
	return f
}
