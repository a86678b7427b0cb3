package api

import (
	"errors"
	"strings"
	"testing"
)

func TestVMFields_Validate(t *testing.T) {
	n := func(v int) *int { return &v }
	g := func(v float64) *float64 { return &v }
	cases := []struct {
		name   string
		fields VMFields
		field  string // "" for valid
	}{
		{"nothing given", VMFields{}, ""},
		{"all within their limits", VMFields{CPU: n(256), Memory: g(0), Scheduler: SchedulerMostAllocated, Tag: "ssd", DisplayDPI: n(0), Timeout: g(1)}, ""},
		{"no CPU", VMFields{CPU: n(0)}, "cpu"},
		{"too many CPUs", VMFields{CPU: n(257)}, "cpu"},
		{"negative memory", VMFields{Memory: g(-1)}, "memory"},
		{"unknown scheduler", VMFields{Scheduler: "fastest"}, "scheduler"},
		{"tag too long", VMFields{Tag: strings.Repeat("t", 64)}, "tag"},
		{"display too wide", VMFields{DisplayWidth: n(MaxDisplay + 1)}, "displayWidth"},
		{"a 64-character metadata key", VMFields{CustomMetadata: map[string]string{strings.Repeat("k", 64): "v"}}, "customMetadata"},
		{"a timeout under a minute", VMFields{Timeout: g(0.5)}, "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.fields.Validate()
			var fe *FieldError
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
				t.Fatalf("err = %v, want a refusal of %q", err, c.field)
			}
		})
	}
}

// A VM config's zero fields are not given (the defaults apply); a deploy's
// nil ones are not.
func TestVMConfig_Fields_zero_is_not_given(t *testing.T) {
	if err := (VMConfig{Name: "c", Image: "x"}).Fields().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (VMConfig{CPU: -1}).Fields().Validate(); err == nil {
		t.Fatal("a negative CPU count passed")
	}
}
