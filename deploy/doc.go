// Package deploy is the one home of what a deploy request means: its fields
// merged over its VM config's and over the defaults, checked field by field,
// with the image (and installer ISO) it names, into the VM it makes and the
// constraints on that VM's node (Resolve). Its VM's template shape
// (raftfsm.VM.Shape) is the one a warm VM config builds
// (raftfsm.VMConfig.WarmShape), so a template made for a config starts the
// VMs deployed from it.
//
// It does no HTTP and holds no state: it reads the replicated state through
// State, and a registry reference through the function it is given; its
// errors are the FSM's rule kinds (raftfsm.ErrInvalid naming the field,
// ErrNotFound, ErrConflict), which the API answers 400, 404 and 409.
//
// A Runner then has the scheduler place the result and waits on the
// replica until the VM runs; a VM that fails to start, or does not run in
// time, is removed, so nothing stays allocated after a failed deploy.
package deploy
