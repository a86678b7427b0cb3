package vz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.BaseCopies = (*Driver)(nil)

// rawDir holds the raw copies of the bases (rawBase), named
// <base's file name>.raw.
func (d *Driver) rawDir() string { return filepath.Join(d.cfg.Dir, ".raw") }

// DropBaseCopies removes the raw copies of the bases keep no longer wants.
// A VM's disk is a clone of its copy (a file of its own), so a copy goes
// whatever VMs were made from it; a conversion under way (a .tmp file) is
// left alone.
func (d *Driver) DropBaseCopies(ctx context.Context, keep func(base string) bool) ([]string, error) {
	es, err := os.ReadDir(d.rawDir())
	if err != nil {
		return nil, fmt.Errorf("vz: base copies: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range es {
		if ctx.Err() != nil {
			return removed, ctx.Err()
		}
		base, ok := strings.CutSuffix(e.Name(), ".raw")
		if !ok || !e.Type().IsRegular() || keep(base) {
			continue
		}
		if err := os.Remove(filepath.Join(d.rawDir(), e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("vz: %w", err))
			continue
		}
		removed = append(removed, base)
	}
	return removed, errors.Join(errs...)
}
