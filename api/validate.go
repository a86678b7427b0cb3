package api

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid")

var (
	nameRE      = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	imageNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)
	tagRE       = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	userRE      = regexp.MustCompile(`^[a-z0-9]([a-z0-9._@+-]*[a-z0-9])?$`)
)

// Name length limits.
const (
	MaxNameLen     = 63
	MaxVMConfigLen = 50
	MaxTagLen      = 63
	MaxImageLen    = 128
)

// Maxima of the lists in request bodies (a longer list is a 400) and of what
// a namespace's role binding holds (409 beyond it).
const (
	// MaxSubjectsPerCall bounds users plus service accounts in one
	// add-subject or remove-subject call.
	MaxSubjectsPerCall = 1000
	// MaxBindingSubjects bounds the subjects bound to one namespace.
	MaxBindingSubjects = 10000
	// MaxMetadata bounds customMetadata entries of a deploy or VM config.
	MaxMetadata = 64
	// MaxMetadataKey and MaxMetadataValue bound one customMetadata entry.
	MaxMetadataKey, MaxMetadataValue = 63, 1024
	// MaxReservedPorts bounds the node:guest pairs of reservedPorts.
	MaxReservedPorts = 32
)

// ValidateImageName checks an image or ISO name: lowercase letters, digits,
// '-', '.' and '_', starting and ending with a letter or digit.
func ValidateImageName(kind, name string) error {
	switch {
	case name == "":
		return invalidf("%s must not be empty", kind)
	case len(name) > MaxImageLen:
		return invalidf("%s %q is longer than %d characters", kind, name, MaxImageLen)
	case !imageNameRE.MatchString(name):
		return invalidf("%s %q must be lowercase letters, digits, '-', '.' and '_', starting and ending with a letter or digit", kind, name)
	}
	return nil
}

// invalidError is a validation failure; its message is meant for the caller
// and it unwraps to ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// IsRegistryReference reports whether an image named in a deploy or a VM
// config is a registry reference ("<registry>/<path>:<tag>", read at
// deploy) rather than the name of an image of the namespace, which never
// holds a '/'.
func IsRegistryReference(image string) bool { return strings.Contains(image, "/") }

// ValidateName checks a VM, vmconfig, namespace or service account name: lowercase
// letters, digits and '-', starting with a letter and ending with a letter or
// digit, at most max characters. kind names the field in the error.
func ValidateName(kind, name string, max int) error {
	switch {
	case name == "":
		return invalidf("%s must not be empty", kind)
	case len(name) > max:
		return invalidf("%s %q is longer than %d characters", kind, name, max)
	case !nameRE.MatchString(name):
		return invalidf("%s %q must be lowercase letters, digits and '-', start with a letter and end with a letter or digit", kind, name)
	}
	return nil
}

// MaxUserLen bounds a user name: an e-mail address fits.
const MaxUserLen = 254

// ValidateUserName checks a user's name: lowercase letters, digits and
// '.', '_', '@', '+', '-', starting and ending with a letter or digit, at
// most MaxUserLen characters; an e-mail address an identity provider
// gives is one. Every name ValidateName takes is one too.
func ValidateUserName(kind, name string) error {
	switch {
	case name == "":
		return invalidf("%s must not be empty", kind)
	case len(name) > MaxUserLen:
		return invalidf("%s %q is longer than %d characters", kind, name, MaxUserLen)
	case !userRE.MatchString(name):
		return invalidf("%s %q must be lowercase letters, digits and '.', '_', '@', '+', '-', and start and end with a letter or digit", kind, name)
	}
	return nil
}

// ValidateGroup checks a directory group's name as a provider sends it
// (Entra ID sends ids, Keycloak paths, GitLab "group/subgroup"): 1 to
// MaxGroupLen bytes of UTF-8 without control characters.
func ValidateGroup(g string) error {
	switch {
	case g == "":
		return invalidf("group must not be empty")
	case len(g) > MaxGroupLen:
		return invalidf("group %q is longer than %d bytes", g[:32]+"...", MaxGroupLen)
	case !utf8.ValidString(g):
		return invalidf("group %q is not UTF-8", g)
	}
	for _, r := range g {
		if unicode.IsControl(r) {
			return invalidf("group %q holds a control character", g)
		}
	}
	return nil
}

// ValidateTag checks a node tag: at most 63 letters, digits, '-', '_' or '.'.
func ValidateTag(tag string) error {
	switch {
	case tag == "":
		return invalidf("tag must not be empty")
	case len(tag) > MaxTagLen:
		return invalidf("tag %q is longer than %d characters", tag, MaxTagLen)
	case !tagRE.MatchString(tag):
		return invalidf("tag %q may hold only letters, digits, '-', '_' and '.'", tag)
	}
	return nil
}

// ValidateMetadata checks customMetadata, of a deploy or a VM config alike:
// at most MaxMetadata entries, keys of 1 to MaxMetadataKey bytes, values of
// at most MaxMetadataValue.
func ValidateMetadata(m map[string]string) error {
	if len(m) > MaxMetadata {
		return invalidf("%d entries, at most %d", len(m), MaxMetadata)
	}
	for k, v := range m {
		if k == "" || len(k) > MaxMetadataKey || len(v) > MaxMetadataValue {
			return invalidf("keys must be 1-%d characters and values at most %d (%q)", MaxMetadataKey, MaxMetadataValue, k)
		}
	}
	return nil
}
