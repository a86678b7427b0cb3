// Package vz is the macOS hosts' hypervisor (Apple's Virtualization
// framework). This far it holds the pure-Go parts, built and tested on
// every platform: the guests' addresses read from the host's DHCP leases
// (vz's NAT network has no API for a guest's address), and the forwards of
// the node's ports to a guest's (it has no port forwards either).
package vz
