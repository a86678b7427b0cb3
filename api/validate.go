package api

import (
	"errors"
	"fmt"
	"regexp"
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid")

var (
	nameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	tagRE  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// Name length limits.
const (
	MaxNameLen     = 63
	MaxVMConfigLen = 50
	MaxTagLen      = 63
)

// ValidateName checks a VM, vmconfig, namespace or service account name: lowercase
// letters, digits and '-', starting with a letter and ending with a letter or
// digit, at most max characters. kind names the field in the error.
func ValidateName(kind, name string, max int) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s must not be empty", ErrInvalid, kind)
	case len(name) > max:
		return fmt.Errorf("%w: %s %q is longer than %d characters", ErrInvalid, kind, name, max)
	case !nameRE.MatchString(name):
		return fmt.Errorf("%w: %s %q must be lowercase letters, digits and '-', start with a letter and end with a letter or digit", ErrInvalid, kind, name)
	}
	return nil
}

// ValidateTag checks a node tag: at most 63 letters, digits, '-', '_' or '.'.
func ValidateTag(tag string) error {
	switch {
	case tag == "":
		return fmt.Errorf("%w: tag must not be empty", ErrInvalid)
	case len(tag) > MaxTagLen:
		return fmt.Errorf("%w: tag %q is longer than %d characters", ErrInvalid, tag, MaxTagLen)
	case !tagRE.MatchString(tag):
		return fmt.Errorf("%w: tag %q may hold only letters, digits, '-', '_' and '.'", ErrInvalid, tag)
	}
	return nil
}
