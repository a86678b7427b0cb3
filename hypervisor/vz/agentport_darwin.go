//go:build darwin && cgo

package vz

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/Code-Hex/vz/v3"
)

// pipePort is the host end of the guest agent's console port: what the
// guest writes is read from r, what is written to w the guest reads.
type pipePort struct{ r, w *os.File }

func (p *pipePort) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipePort) Write(b []byte) (int, error) { return p.w.Write(b) }

// Close closes the host's ends.
func (p *pipePort) Close() error { return errors.Join(p.r.Close(), p.w.Close()) }

// deadPort is an agent port the framework could not make (macOS before
// 13): reads end at once, writes go nowhere, so calls find no agent.
type deadPort struct{}

func (deadPort) Read([]byte) (int, error)    { return 0, io.EOF }
func (deadPort) Write(b []byte) (int, error) { return len(b), nil }

// addAgentPort gives the machine a virtio console port named as QEMU's
// guest agent's (AgentPortName), attached to two pipes, and returns the
// pipes' host ends (macOS 13 or later).
func addAgentPort(vmc *vz.VirtualMachineConfiguration) (*pipePort, error) {
	toHost, guestWrites, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	guestReads, fromHost, err := os.Pipe()
	if err != nil {
		toHost.Close()
		guestWrites.Close()
		return nil, err
	}
	fail := func(err error) (*pipePort, error) {
		for _, f := range []*os.File{toHost, guestWrites, guestReads, fromHost} {
			f.Close()
		}
		return nil, fmt.Errorf("the guest agent's port: %w", err)
	}
	att, err := vz.NewFileHandleSerialPortAttachment(guestReads, guestWrites)
	if err != nil {
		return fail(err)
	}
	port, err := vz.NewVirtioConsolePortConfiguration(
		vz.WithVirtioConsolePortConfigurationName(AgentPortName),
		vz.WithVirtioConsolePortConfigurationAttachment(att),
	)
	if err != nil {
		return fail(err)
	}
	dev, err := vz.NewVirtioConsoleDeviceConfiguration()
	if err != nil {
		return fail(err)
	}
	dev.SetVirtioConsolePortConfiguration(0, port)
	vmc.SetConsoleDevicesVirtualMachineConfiguration([]vz.ConsoleDeviceConfiguration{dev})
	return &pipePort{r: toHost, w: fromHost}, nil
}

// AgentPort is the host end of the guest agent's port.
func (m *vzMachine) AgentPort() io.ReadWriter { return m.agent }
