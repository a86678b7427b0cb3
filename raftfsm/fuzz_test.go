package raftfsm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
)

func fuzzSeeds(f *testing.F) {
	for _, b := range [][]byte{
		initCmd(f),
		upsertCmd(f, "n1"),
		mustEncode(f, TypeNodeSetPhase, NodeSetPhase{Name: "n1", Phase: api.PhaseNotReady}),
		mustEncode(f, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "ssd"}),
		mustEncode(f, TypeNodeUntag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "ssd"}),
		mustEncode(f, TypeNodeSetNamespace, NodeSetNamespace{Name: "n1", Namespace: "a"}),
		mustEncode(f, TypeNamespaceCreate, NamespaceCreate{Name: "a"}),
		mustEncode(f, TypeNamespaceDelete, NamespaceDelete{Name: "a"}),
		vmCreateCmd(f, "a", "n1", 1, 1<<30, 22001),
		vmActionCmd(f, "a", ActionRevert),
		mustEncode(f, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning}),
		mustEncode(f, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a"}),
		mustEncode(f, TypeVMConfigCreate, VMConfigCreate{Config: VMConfig{Name: "c", Namespace: api.DefaultNamespace, Image: "mini"}}),
		mustEncode(f, TypeVMConfigDelete, VMConfigDelete{Namespace: api.DefaultNamespace, Name: "c"}),
		imageCmd(f, "mini2", "n1"),
		mustEncode(f, TypeBlobAddHolder, BlobAddHolder{Digest: "sha256:aa", Node: "n2"}),
		mustEncode(f, TypeBlobDropHolder, BlobDropHolder{Digest: "sha256:aa", Node: "n1"}),
		mustEncode(f, TypeImageCopy, ImageCopy{Namespace: api.DefaultNamespace, Name: "mini", NewName: "mini9"}),
		mustEncode(f, TypeImageDescribe, ImageDescribe{Namespace: api.DefaultNamespace, Name: "mini", Description: "d"}),
		mustEncode(f, TypeImageDelete, ImageDelete{Kind: KindISO, Namespace: api.DefaultNamespace, Name: "mini"}),
		mustEncode(f, TypeVMImageOp, VMImageOp{Namespace: api.DefaultNamespace, VM: "a", Kind: OpSave, Image: "s"}),
		mustEncode(f, TypeVMImageOpDone, VMImageOpDone{Namespace: api.DefaultNamespace, VM: "a", ID: 5, Node: "n1", Digest: "sha256:" + strings.Repeat("b", 64), SizeBytes: 1}),
		mustEncode(f, TypeVMImageOpFailed, VMImageOpFailed{Namespace: api.DefaultNamespace, VM: "a", ID: 5, Node: "n1", Error: "e"}),
		mustEncode(f, TypeUserUpsert, UserUpsert{Name: "alice", Admin: true}),
		mustEncode(f, TypeUserRemove, UserRemove{Name: "alice"}),
		mustEncode(f, TypeSACreate, SACreate{Namespace: api.DefaultNamespace, Name: "ci"}),
		mustEncode(f, TypeSADelete, SADelete{Namespace: api.DefaultNamespace, Name: "ci"}),
		mustEncode(f, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"bob"}, ServiceAccounts: []string{"svc-default:ci"}}),
		mustEncode(f, TypeRoleBindingDel, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"bob"}}),
		mustEncode(f, TypeCertSet, CertSet{Cert: Cert{CertPEM: "c", KeyPEM: "k"}}),
		mustEncode(f, TypeSigningKeySet, SigningKeySet{SigningKey: make([]byte, 32)}),
		mustEncode(f, TypeRegCredSet, RegistryCredentialSet{Credential: RegistryCredential{Namespace: api.DefaultNamespace, Server: "r:5000", Username: "u", SealedPassword: []byte{1}}}),
		mustEncode(f, TypeRegCredDelete, RegistryCredentialDelete{Namespace: api.DefaultNamespace, Server: "r:5000"}),
		mustEncode(f, TypeJobCreate, JobCreate{Job: Job{Name: "push-a", Namespace: api.DefaultNamespace, Type: JobPush, Node: "n1", Reference: "r:5000/a:b", VM: "a"}}),
		mustEncode(f, TypeJobUpdate, JobUpdate{Namespace: api.DefaultNamespace, Name: "push-a", State: JobFailed, Message: "m"}),
		mustEncode(f, TypeJobDelete, JobDelete{Namespace: api.DefaultNamespace, Name: "push-a"}),
		mustEncode(f, TypeCatalogSet, CatalogSet{Repositories: []string{"r:5000/os/images"}}),
		mustEncode(f, TypeNodeTemplates, NodeTemplates{Node: "n1", Templates: []Template{{Key: Shape{ImageDigest: "sha256:aa", CPU: 1, MemoryBytes: 1 << 30}.Key(), Shape: Shape{ImageDigest: "sha256:aa", CPU: 1, MemoryBytes: 1 << 30}}}}),
		mustEncode(f, TypeVMConfigSetWarm, VMConfigSetWarm{Namespace: api.DefaultNamespace, Name: "c", Warm: true}),
		mustEncode(f, TypeVMConfigSetHot, VMConfigSetHot{Namespace: api.DefaultNamespace, Name: "c", Hot: 2}),
		mustEncode(f, TypeNodeHot, NodeHot{Node: "n1", Guests: []HotGuest{{Key: Shape{ImageDigest: "sha256:aa", CPU: 1, MemoryBytes: 1 << 30}.Key(), Domain: HotDomainPrefix("n1") + "g1"}}}),
		mustEncode(f, TypeVMDiskSize, VMDiskSize{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", UID: 3, DiskBytes: 8 << 30}),
		mustEncode(f, TypeNodeCordon, NodeCordon{Namespace: api.DefaultNamespace, Name: "n1", Cordoned: true}),
		mustEncode(f, TypeNamespaceQuota, NamespaceQuotaSet{Namespace: api.DefaultNamespace, Quota: &Quota{CPU: 4, MemoryBytes: 8 << 30, VMs: 3}}),
		mustEncode(f, TypeVMExtend, VMExtend{Namespace: api.DefaultNamespace, Name: "a", Seconds: 3600}),
		mustEncode(f, TypeAuditAppend, AuditAppend{Entries: []AuditEntry{{Subject: "alice", Method: "POST", Path: "/api/v1/namespaces", Code: 201}}, Keep: 100}),
		tokenCmd(f, 2, t0.Add(time.Hour)),
		admitCmd(f, "n3", keyOf('c'), t0),
		mustEncode(f, TypeJoinTokenRevoke, JoinTokenRevoke{ID: tokID}),
		mustEncode(f, TypeNodeRemove, NodeRemove{Name: "n3", By: "admin", Time: t0}),
		mustEncode(f, TypePeerAddr, PeerAddr{Name: "first", Addr: "127.0.0.2", RaftAddr: "127.0.0.2:7000"}),
		mustEncode(f, TypePeerApprove, PeerApprove{Name: "first", By: "admin", Time: time.Unix(1700000000, 0).UTC()}),
		mustEncode(f, TypeGossipKeysSet, GossipKeysSet{Keys: []byte("k")}),
		mustEncode(f, TypeOIDCProviderSet, OIDCProviderSet{Provider: OIDCProvider{Name: "corp", Issuer: "https://idp.example", ClientID: "svc", UsernameClaim: "email", AdminGroups: []string{"admins"}}}),
		mustEncode(f, TypeUserSignIn, UserSignIn{Name: "alice@example.com", Groups: []string{"dev"}, Provider: "corp", Time: t0}),
		mustEncode(f, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Groups: []string{"dev"}, Time: t0}),
		mustEncode(f, TypeOIDCProviderDel, OIDCProviderDelete{Name: "corp"}),
		mustEncode(f, TypeRunnerPoolSet, RunnerPoolSet{Pool: testPool()}),
		mustEncode(f, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: api.DefaultNamespace, Pool: "ci", ID: 7, State: RunnerJobQueued}, Time: t0}),
		mustEncode(f, TypeRunnerJobUpdate, RunnerJobUpdate{Job: RunnerJob{Namespace: api.DefaultNamespace, Pool: "ci", ID: 7, State: RunnerJobStarting, VM: "ci-7"}, Time: t0}),
		mustEncode(f, TypeRunnerJobRan, RunnerJobRan{Job: RunnerJob{Namespace: api.DefaultNamespace, Pool: "ci", ID: 8, State: RunnerJobRunning}, Runner: "ci-7", Time: t0}),
		mustEncode(f, TypeRunnerPoolDelete, RunnerPoolDelete{Namespace: api.DefaultNamespace, Name: "ci"}),
		mustEncode(f, TypeNamespaceSharedStorage, NamespaceSharedStorage{Namespace: api.DefaultNamespace, SharedStorage: &SharedStorage{MaxBytes: 2 << 30}}),
		mustEncode(f, TypeNodeSharedUsage, NodeSharedUsage{Node: "n1", Usage: map[string]int64{api.DefaultNamespace: 4096}}),
		{byte(FlagIgnorable | 0x55), '{', '}'},
		{},
	} {
		f.Add(b)
	}
}

// FuzzDecode checks that the decoder never panics and that what it accepts
// re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		if !c.Type.Known() {
			t.Fatalf("accepted unknown type %d", c.Type)
		}
		again := append([]byte{byte(c.Type)}, c.Body...)
		if string(again) != string(b) {
			t.Fatalf("round trip %q != %q", again, b)
		}
	})
}

// FuzzApply checks that any decodable command applied to a populated state
// either succeeds or returns an error, never panics, and that a refused
// command leaves the state unchanged.
func FuzzApply(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		fsm := NewFSM(nil)
		applyAll(t, fsm, append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001))...)
		before, _ := fsm.Dump()
		res := fsm.ApplyCommand(5, c)
		if res.Err != nil {
			after, _ := fsm.Dump()
			if string(before) != string(after) {
				t.Fatalf("refused command %q (%v) changed the state", b, res.Err)
			}
			if !errors.Is(res.Err, ErrBadBody) && !errors.Is(res.Err, ErrInvalid) && !errors.Is(res.Err, ErrNotFound) &&
				!errors.Is(res.Err, ErrAlreadyExists) && !errors.Is(res.Err, ErrConflict) {
				t.Fatalf("error of no known kind: %v", res.Err)
			}
		}
		roundTrip(t, fsm)
	})
}
