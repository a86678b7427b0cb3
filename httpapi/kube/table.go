package kube

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// kubectl asks for its tables (Accept: application/json;as=Table;
// v=v1;g=meta.k8s.io): the server says which columns an object has and
// fills them in, as Kubernetes' own resources (and Orka's) do. Without
// one, kubectl shows NAME and AGE alone.

// column is one column of a resource's table: its definition, and its
// cell of an object.
type column struct {
	def  metav1.TableColumnDefinition
	cell func(o object) any
}

func col(name, typ, description string, cell func(o object) any) column {
	return column{def: metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}, cell: cell}
}

// priority marks a column kubectl shows only with -o wide.
func (c column) wide() column { c.def.Priority = 1; return c }

// age is an object's age as kubectl prints it ("5m", "2d").
func age(o object) any {
	t := o.meta().CreationTimestamp
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// port is a port, or "" when there is none.
func port(p *int) any {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// tableColumns are each resource's columns, by its plural.
func tableColumns(plural string) []column {
	name := col("Name", "string", "The object's name.", func(o object) any { return o.meta().Name })
	ageCol := col("Age", "string", "How long ago the object was made.", age)
	switch plural {
	case "virtualmachineinstances":
		vmi := func(f func(*VirtualMachineInstance) any) func(object) any {
			return func(o object) any { return f(o.(*VirtualMachineInstance)) }
		}
		return []column{name,
			col("Status", "string", "The VM's phase.", vmi(func(v *VirtualMachineInstance) any { return v.Status.Phase })),
			col("Node", "string", "The node the VM runs on.", vmi(func(v *VirtualMachineInstance) any { return v.Status.NodeName })),
			col("IP", "string", "The address its ports are reached at.", vmi(func(v *VirtualMachineInstance) any { return v.Status.IP })),
			col("SSH", "string", "Its SSH port.", vmi(func(v *VirtualMachineInstance) any { return port(v.Status.SSHPort) })),
			col("VNC", "string", "Its screen's port.", vmi(func(v *VirtualMachineInstance) any { return port(v.Status.VNCPort) })).wide(),
			col("Image", "string", "The image it was deployed from.", vmi(func(v *VirtualMachineInstance) any { return v.Spec.Image })),
			col("CPU", "integer", "Its CPUs.", vmi(func(v *VirtualMachineInstance) any { return v.Spec.CPU })).wide(),
			col("Memory", "string", "Its memory.", vmi(func(v *VirtualMachineInstance) any { return v.Status.Memory })).wide(),
			ageCol}
	case "images":
		img := func(f func(*Image) any) func(object) any { return func(o object) any { return f(o.(*Image)) } }
		return []column{name,
			col("State", "string", "Ready, Updating or Failed.", img(func(i *Image) any { return i.Status.State })),
			col("Size", "string", "The disk's size as its guests see it.", img(func(i *Image) any {
				if i.Spec.Size == nil {
					return ""
				}
				return i.Spec.Size.String()
			})),
			col("Owner", "string", "Who made it.", img(func(i *Image) any { return i.Spec.Owner })).wide(),
			ageCol}
	case "virtualmachineconfigs":
		cfg := func(f func(*VirtualMachineConfig) any) func(object) any {
			return func(o object) any { return f(o.(*VirtualMachineConfig)) }
		}
		return []column{name,
			col("Image", "string", "The image its VMs are deployed from.", cfg(func(c *VirtualMachineConfig) any { return c.Spec.Image })),
			col("CPU", "integer", "Its VMs' CPUs.", cfg(func(c *VirtualMachineConfig) any { return c.Spec.CPU })),
			col("Memory", "string", "Its VMs' memory in GiB.", cfg(func(c *VirtualMachineConfig) any {
				if c.Spec.Memory == nil {
					return ""
				}
				return strconv.FormatFloat(*c.Spec.Memory, 'f', -1, 64)
			})),
			ageCol}
	case "orkanodes":
		node := func(f func(*OrkaNode) any) func(object) any { return func(o object) any { return f(o.(*OrkaNode)) } }
		return []column{name,
			col("Phase", "string", "READY or NOT READY.", node(func(n *OrkaNode) any { return n.Status.Phase })),
			col("IP", "string", "The node's address.", node(func(n *OrkaNode) any { return n.Status.NodeIP })),
			col("CPU", "string", "CPUs free of all.", node(func(n *OrkaNode) any {
				return strconv.Itoa(n.Status.AvailableCPU) + "/" + strconv.FormatInt(n.Status.AllocatableCPU, 10)
			})),
			col("Memory", "string", "Memory free of all.", node(func(n *OrkaNode) any {
				return n.Status.AvailableMemory + "/" + n.Status.AllocatableMemory
			})),
			col("Tags", "string", "Its tags.", node(func(n *OrkaNode) any { return strings.Join(n.Spec.Tags, ",") })).wide(),
			ageCol}
	case "pods":
		pod := func(f func(*Pod) any) func(object) any { return func(o object) any { return f(o.(*Pod)) } }
		return []column{name,
			col("Status", "string", "The job's state.", pod(func(p *Pod) any { return p.Status.Phase })),
			col("Message", "string", "The job's message.", pod(func(p *Pod) any { return p.Status.Message })).wide(),
			ageCol}
	}
	return []column{name, ageCol}
}

// wantsTable reports whether r asks for the Table form of its answer,
// first among what it accepts.
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt != "application/json" {
			continue
		}
		if params["as"] == "Table" && (params["g"] == "meta.k8s.io" || params["g"] == "") && (params["v"] == "v1" || params["v"] == "") {
			return true
		}
		if params["as"] == "" {
			return false // plain JSON is asked for first
		}
	}
	return false
}

// table is objs (each finished) as a Table of the call's resource.
func (c *call) table(objs []object, version string) *metav1.Table {
	cols := tableColumns(c.res.plural)
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ListMeta: metav1.ListMeta{ResourceVersion: version},
		Rows:     []metav1.TableRow{},
	}
	for _, c := range cols {
		t.ColumnDefinitions = append(t.ColumnDefinitions, c.def)
	}
	for _, o := range objs {
		meta, _ := json.Marshal(metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: *o.meta(),
		})
		row := metav1.TableRow{Object: runtime.RawExtension{Raw: meta}}
		for _, c := range cols {
			row.Cells = append(row.Cells, c.cell(o))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
