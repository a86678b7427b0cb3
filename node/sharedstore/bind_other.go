//go:build !linux

package sharedstore

import "errors"

// errNoSharedMounts: mount propagation is Linux's.
var errNoSharedMounts = errors.New("shared folders need Linux's mounts")

func bindShared(string) error { return errNoSharedMounts }

func detach(string) error { return errNoSharedMounts }
