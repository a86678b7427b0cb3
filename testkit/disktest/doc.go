// Package disktest makes disk images for tests: plain ones with qemu-img,
// and hostile ones that name files of the host (a backing file, an
// external data file). A hostile image is made without qemu-img ever
// opening the file it names: qemu-img create resizes an external data
// file it is given, so it is given a scratch file, and the name is
// written into the header afterwards.
package disktest
