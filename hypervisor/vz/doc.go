// Package vz is the macOS hosts' hypervisor (Apple's Virtualization
// framework). This far it holds the pure-Go parts, built and tested on
// every platform: reading the guests' addresses from the host's DHCP
// leases (vz's NAT network has no API for a guest's address).
package vz
