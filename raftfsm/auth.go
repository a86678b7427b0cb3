package raftfsm

import (
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// User is a person an admin named (by minting a token or binding them).
type User struct {
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"createdAt"`
	// UID tells this user from an earlier one of the same name: the index of
	// the log entry that named it. Tokens carry it, so a removal voids every
	// token issued before it (0: named before UIDs existed).
	UID uint64 `json:"uid,omitempty"`
	// Groups are the directory groups the person's provider named at their
	// last sign-in; Provider is that provider (empty for users root on a
	// host named); SignedInAt is when.
	Groups     []string   `json:"groups,omitempty"`
	Provider   string     `json:"provider,omitempty"`
	SignedInAt *time.Time `json:"signedInAt,omitempty"`
	// Issuer and Subject are who the person is to their provider (its
	// issuer URL and their "sub"): a person is that pair, never a name or
	// an e-mail address alone. Empty for users root on a host named, and
	// for people who signed in before the pair was kept (it is recorded at
	// their next sign-in through the same provider).
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Unclaimed is a record a role binding made before anyone had the
	// name: the first person to sign in under it takes it.
	Unclaimed bool `json:"unclaimed,omitempty"`
}

func (u *User) sortKey() string { return u.Name }

func (u *User) clone() *User {
	c := *u
	c.Groups = slices.Clone(u.Groups)
	if u.SignedInAt != nil {
		t := *u.SignedInAt
		c.SignedInAt = &t
	}
	return &c
}

// ServiceAccount is a non-human subject of a namespace.
type ServiceAccount struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	CreatedAt time.Time `json:"createdAt"`
	// UID is the index of the log entry that created it (see User.UID).
	UID uint64 `json:"uid,omitempty"`
}

func (sa *ServiceAccount) sortKey() string { return key(sa.Namespace, sa.Name) }

func (sa *ServiceAccount) clone() *ServiceAccount {
	c := *sa
	return &c
}

// RoleBinding lists the subjects bound to a namespace: users, service
// accounts and the directory groups of people who sign in through a
// provider.
type RoleBinding struct {
	Namespace       string   `json:"namespace"`
	Users           []string `json:"users"`
	ServiceAccounts []string `json:"serviceAccounts"`
	Groups          []string `json:"groups,omitempty"`
}

func (rb *RoleBinding) clone() *RoleBinding {
	c := *rb
	c.Users = append([]string{}, rb.Users...)
	c.ServiceAccounts = append([]string{}, rb.ServiceAccounts...)
	c.Groups = append([]string{}, rb.Groups...)
	return &c
}

// UserUpsert records a user; an existing user keeps its creation time (and so
// its tokens) and takes the new admin flag.
type UserUpsert struct {
	Name  string    `json:"name"`
	Admin bool      `json:"admin"`
	Time  time.Time `json:"time"`
}

// UserRemove removes a user; its tokens stop working.
type UserRemove struct {
	Name string `json:"name"`
}

// SACreate creates a service account.
type SACreate struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Time      time.Time `json:"time"`
}

// SADelete deletes a service account; its tokens stop working.
type SADelete struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// RoleBindingChange adds (TypeRoleBindingAdd) or removes
// (TypeRoleBindingDel) subjects of a namespace. Service accounts are
// "namespace:name".
type RoleBindingChange struct {
	Namespace       string    `json:"namespace"`
	Users           []string  `json:"users"`
	ServiceAccounts []string  `json:"serviceAccounts"`
	Groups          []string  `json:"groups,omitempty"`
	Time            time.Time `json:"time"`
	// Claimable: the users a binding names that have no record yet get
	// one a person may claim at their first sign-in (User.Unclaimed).
	// Bindings written before people were kept by issuer and subject make
	// records that are not claimable.
	Claimable bool `json:"claimable,omitempty"`
}

func (s *State) applyUserUpsert(index uint64, c UserUpsert) (any, error) {
	if err := api.ValidateUserName("user", c.Name); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	u, ok := s.Users[c.Name]
	if !ok {
		u = &User{Name: c.Name, CreatedAt: c.Time, UID: index}
		s.Users[c.Name] = u
	}
	u.Admin, u.Unclaimed = c.Admin, false // root named it
	cp := *u
	return &cp, nil
}

func (s *State) applyUserRemove(c UserRemove) (any, error) {
	if _, ok := s.Users[c.Name]; !ok {
		return nil, ruleErr(ErrNotFound, "user %q not found", c.Name)
	}
	delete(s.Users, c.Name)
	for _, rb := range s.RoleBindings {
		rb.Users = slices.DeleteFunc(rb.Users, func(u string) bool { return u == c.Name })
	}
	return nil, nil
}

func (s *State) applySACreate(index uint64, c SACreate) (any, error) {
	if err := api.ValidateName("service account", c.Name, api.MaxNameLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if _, ok := s.Namespaces[c.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", c.Namespace)
	}
	k := key(c.Namespace, c.Name)
	if _, ok := s.ServiceAccounts[k]; ok {
		return nil, ruleErr(ErrAlreadyExists, "service account %q already exists in namespace %q", c.Name, c.Namespace)
	}
	sa := &ServiceAccount{Name: c.Name, Namespace: c.Namespace, CreatedAt: c.Time, UID: index}
	s.ServiceAccounts[k] = sa
	cp := *sa
	return &cp, nil
}

func (s *State) applySADelete(c SADelete) (any, error) {
	k := key(c.Namespace, c.Name)
	if _, ok := s.ServiceAccounts[k]; !ok {
		return nil, ruleErr(ErrNotFound, "service account %q not found in namespace %q", c.Name, c.Namespace)
	}
	delete(s.ServiceAccounts, k)
	ref := c.Namespace + ":" + c.Name
	for _, rb := range s.RoleBindings {
		rb.ServiceAccounts = slices.DeleteFunc(rb.ServiceAccounts, func(x string) bool { return x == ref })
	}
	return nil, nil
}

// splitSARef splits "namespace:name".
func splitSARef(ref string) (ns, name string, ok bool) {
	ns, name, ok = strings.Cut(ref, ":")
	return ns, name, ok && ns != "" && name != ""
}

func (s *State) checkSubjects(c RoleBindingChange, mustExist bool) error {
	if _, ok := s.Namespaces[c.Namespace]; !ok {
		return ruleErr(ErrNotFound, "namespace %q not found", c.Namespace)
	}
	n := len(c.Users) + len(c.ServiceAccounts) + len(c.Groups)
	if n == 0 {
		return ruleErr(ErrInvalid, "name at least one user, service account or group")
	}
	if n > api.MaxSubjectsPerCall {
		return ruleErr(ErrInvalid, "%d subjects, at most %d in one change", n, api.MaxSubjectsPerCall)
	}
	for _, u := range c.Users {
		if err := api.ValidateUserName("user", u); err != nil {
			return ruleErr(ErrInvalid, "%s", err.Error())
		}
	}
	if err := checkGroups("groups", c.Groups, api.MaxSubjectsPerCall); err != nil {
		return err
	}
	for _, ref := range c.ServiceAccounts {
		ns, name, ok := splitSARef(ref)
		if !ok {
			return ruleErr(ErrInvalid, "service account %q must be namespace:name", ref)
		}
		if _, ok := s.ServiceAccounts[key(ns, name)]; mustExist && !ok {
			return ruleErr(ErrNotFound, "service account %q not found", ref)
		}
	}
	return nil
}

// merge returns sorted list plus the items of add it lacks, and how many
// were new; linear in both lists (plus the sort of the result).
func merge(list, add []string) ([]string, int) {
	have := make(map[string]bool, len(list)+len(add))
	for _, x := range list {
		have[x] = true
	}
	added := 0
	for _, x := range add {
		if !have[x] {
			have[x] = true
			list = append(list, x)
			added++
		}
	}
	if added > 0 {
		slices.Sort(list)
	}
	return list, added
}

// without returns list minus the items of drop, linear in both.
func without(list, drop []string) []string {
	gone := make(map[string]bool, len(drop))
	for _, x := range drop {
		gone[x] = true
	}
	return slices.DeleteFunc(list, func(x string) bool { return gone[x] })
}

func (s *State) applyRoleBindingAdd(index uint64, c RoleBindingChange) (any, error) {
	if err := s.checkSubjects(c, true); err != nil {
		return nil, err
	}
	rb, ok := s.RoleBindings[c.Namespace]
	if !ok {
		rb = &RoleBinding{Namespace: c.Namespace, Users: []string{}, ServiceAccounts: []string{}}
	}
	users, _ := merge(slices.Clone(rb.Users), c.Users)
	sas, _ := merge(slices.Clone(rb.ServiceAccounts), c.ServiceAccounts)
	groups, _ := merge(slices.Clone(rb.Groups), c.Groups)
	if n := len(users) + len(sas) + len(groups); n > api.MaxBindingSubjects {
		return nil, ruleErr(ErrConflict, "namespace %q would bind %d subjects, at most %d", c.Namespace, n, api.MaxBindingSubjects)
	}
	for _, u := range c.Users {
		if _, known := s.Users[u]; !known {
			s.Users[u] = &User{Name: u, CreatedAt: c.Time, UID: index, Unclaimed: c.Claimable}
		}
	}
	rb.Users, rb.ServiceAccounts, rb.Groups = users, sas, groups
	s.RoleBindings[c.Namespace] = rb
	return rb.clone(), nil
}

func (s *State) applyRoleBindingDel(c RoleBindingChange) (any, error) {
	if err := s.checkSubjects(c, false); err != nil {
		return nil, err
	}
	rb, ok := s.RoleBindings[c.Namespace]
	if !ok {
		return (&RoleBinding{Namespace: c.Namespace}).clone(), nil
	}
	rb.Users = without(rb.Users, c.Users)
	rb.ServiceAccounts = without(rb.ServiceAccounts, c.ServiceAccounts)
	rb.Groups = without(rb.Groups, c.Groups)
	return rb.clone(), nil
}

func users(s *State) map[string]*User { return s.Users }

func serviceAccounts(s *State) map[string]*ServiceAccount { return s.ServiceAccounts }

// User returns one user.
func (f *FSM) User(name string) (User, bool) { return get(f, users, name) }

// Users returns every user, sorted by name.
func (f *FSM) Users() []User { return list(f, users, nil) }

// ServiceAccount returns one service account.
func (f *FSM) ServiceAccount(ns, name string) (ServiceAccount, bool) {
	return get(f, serviceAccounts, key(ns, name))
}

// ServiceAccounts returns the service accounts of a namespace, sorted.
func (f *FSM) ServiceAccounts(ns string) []ServiceAccount {
	return list(f, serviceAccounts, func(sa *ServiceAccount) bool { return sa.Namespace == ns })
}

// RoleBinding returns the subjects bound to a namespace (empty lists when none).
func (f *FSM) RoleBinding(ns string) RoleBinding {
	f.mu.RLock()
	defer f.mu.RUnlock()
	rb, ok := f.state.RoleBindings[ns]
	if !ok {
		return RoleBinding{Namespace: ns, Users: []string{}, ServiceAccounts: []string{}, Groups: []string{}}
	}
	return *rb.clone()
}
