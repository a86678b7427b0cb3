package httpapi

import (
	"net/http"

	"github.com/svc-project/svc/api"
)

// routeDoc describes a route for the OpenAPI document: what it does, the
// Go wire types of its body and answer, and its query parameters. Every
// route the router serves outside /api/v1/internal has one (a test checks).
type routeDoc struct {
	Summary string
	Tag     string
	// Req is the request body (a zero value of its type); nil: none.
	Req any
	// Upload is the form field of a multipart upload ("image", "iso",
	// "cert"): the body is a file, not JSON.
	Upload string
	// Body is the content type of a request body taken as is (a snapshot).
	Body string
	// Resp is the answer's body; nil with Code 204: none.
	Resp any
	// Code is the success status (200 unless set).
	Code int
	// Stream is the content type of an answer streamed as is (a download).
	Stream string
	// Query lists query parameters.
	Query []queryParam
}

type queryParam struct {
	Name, Description string
}

var consistentParam = queryParam{"consistent", "true: read through the leader, seeing every write acknowledged before the call"}

// routeDocs is keyed by "METHOD path" as the router holds it.
func routeDocs() map[string]routeDoc {
	get, post, del, put, patch := http.MethodGet+" ", http.MethodPost+" ", http.MethodDelete+" ", http.MethodPut+" ", http.MethodPatch+" "
	const ns = "/api/v1/namespaces/{namespace}"
	read := []queryParam{consistentParam}
	// Lists that stream their changes with ?watch=true.
	watched := []queryParam{consistentParam,
		{"watch", "true: stream the list's changes as newline-delimited JSON events {type: ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, object, resourceVersion}"},
		{"resourceVersion", "with watch: the changes after this version (410 when this peer no longer has them); without: an ADDED event per record first"},
		{"timeoutSeconds", "with watch: end the stream after this long (default 1800, at most 21600)"}}
	return map[string]routeDoc{
		// The Kubernetes-shaped door (docs/kubernetes.md): Kubernetes' own shapes, not described here.
		get + "/version":                {Summary: "The Kubernetes-style version (no token needed)", Tag: "kubernetes", Stream: "application/json"},
		get + "/api":                    {Summary: "Kubernetes discovery: the core group's versions", Tag: "kubernetes", Stream: "application/json"},
		get + "/openapi/v2":             {Summary: "The Kubernetes door's OpenAPI as Swagger 2.0 (protobuf when asked for, else JSON), for kubectl's validation", Tag: "kubernetes", Stream: "application/json"},
		get + "/openapi/v3":             {Summary: "The Kubernetes door's OpenAPI v3: an index of its group versions' documents (each at /openapi/v3/apis/{group}/v1, or /openapi/v3/api/v1: OpenAPI 3.0)", Tag: "kubernetes", Stream: "application/json"},
		get + "/api/v1":                 {Summary: "Kubernetes discovery: the core group's resources served (pods: registry jobs)", Tag: "kubernetes", Stream: "application/json"},
		get + "/apis":                   {Summary: "Kubernetes discovery: the API groups (orka.macstadium.com, svc-project.io)", Tag: "kubernetes", Stream: "application/json"},
		get + "/apis/{group}":           {Summary: "Kubernetes discovery: a group", Tag: "kubernetes", Stream: "application/json"},
		get + "/apis/{group}/{version}": {Summary: "Kubernetes discovery: a group's resources and verbs", Tag: "kubernetes", Stream: "application/json"},
		get + "/apis/{group}/{version}/namespaces/{namespace}/{resource}": {Summary: "List (or with watch=true, watch) a namespace's virtualmachineinstances, images, virtualmachineconfigs or orkanodes", Tag: "kubernetes", Stream: "application/json",
			Query: []queryParam{{"watch", "true: stream watch events"}, {"resourceVersion", "with watch: the changes after it (410 when too old)"}, {"fieldSelector", "metadata.name, metadata.namespace"}, {"labelSelector", "labels"}, {"allowWatchBookmarks", "true: BOOKMARK events"}, {"sendInitialEvents", "true: ADDED events first, then a BOOKMARK marked k8s.io/initial-events-end"}, {"timeoutSeconds", "with watch: end the stream after this long"}}},
		post + "/apis/{group}/{version}/namespaces/{namespace}/{resource}": {Summary: "Create a virtualmachineinstance (a deploy, answered once placed), image (a save, copy or empty disk) or virtualmachineconfig", Tag: "kubernetes", Stream: "application/json", Code: 201,
			Query: []queryParam{{"fieldValidation", "Strict (the default: unknown fields are refused), Warn or Ignore"}}},
		get + "/apis/{group}/{version}/namespaces/{namespace}/{resource}/{name}": {Summary: "Get an object", Tag: "kubernetes", Stream: "application/json"},
		del + "/apis/{group}/{version}/namespaces/{namespace}/{resource}/{name}": {Summary: "Delete an object (DeleteOptions: a UID precondition is checked)", Tag: "kubernetes", Stream: "application/json"},
		get + ns + "/pods":                                    {Summary: "List (or watch) the namespace's registry jobs as Kubernetes pods, labelled orka.macstadium.com/job.type and batch.kubernetes.io/job-name", Tag: "kubernetes", Stream: "application/json"},
		get + ns + "/pods/{name}":                             {Summary: "Get a registry job as a Kubernetes pod", Tag: "kubernetes", Stream: "application/json"},
		get + "/api/v1/cluster-info":                          {Summary: "The cluster's name, version, leader and peers (no token needed)", Tag: "cluster", Resp: api.ClusterInfo{}},
		get + "/api/v1/namespaces":                            {Summary: "List namespaces", Tag: "namespaces", Resp: api.List[api.Namespace]{}, Query: read},
		post + "/api/v1/namespaces":                           {Summary: "Create a namespace", Tag: "namespaces", Req: api.Namespace{}, Resp: api.Namespace{}, Code: 201},
		get + ns:                                              {Summary: "Get a namespace", Tag: "namespaces", Resp: api.Namespace{}, Query: read},
		del + ns:                                              {Summary: "Delete an empty namespace", Tag: "namespaces", Code: 204},
		get + ns + "/rolebindings":                            {Summary: "Users and service accounts bound to the namespace", Tag: "namespaces", Resp: api.Subjects{}, Query: read},
		post + ns + "/rolebindings/add-subject":               {Summary: "Bind users and service accounts to the namespace", Tag: "namespaces", Req: api.Subjects{}, Resp: api.Subjects{}},
		post + ns + "/rolebindings/remove-subject":            {Summary: "Unbind users and service accounts", Tag: "namespaces", Req: api.Subjects{}, Resp: api.Subjects{}},
		get + ns + "/nodes":                                   {Summary: "List the nodes serving the namespace", Tag: "nodes", Resp: api.List[api.Node]{}, Query: watched},
		post + ns + "/nodes/{name}/tag":                       {Summary: "Tag a node", Tag: "nodes", Req: api.TagRequest{}, Resp: api.Node{}},
		post + ns + "/nodes/{name}/untag":                     {Summary: "Remove a node's tag", Tag: "nodes", Req: api.TagRequest{}, Resp: api.Node{}},
		post + ns + "/nodes/{name}/namespace":                 {Summary: "Dedicate a node to a namespace", Tag: "nodes", Req: api.NodeNamespaceRequest{}, Resp: api.Node{}},
		get + ns + "/serviceaccounts":                         {Summary: "List service accounts", Tag: "serviceaccounts", Resp: api.List[api.ServiceAccount]{}, Query: read},
		post + ns + "/serviceaccounts/{serviceaccount}":       {Summary: "Create a service account", Tag: "serviceaccounts", Resp: api.ServiceAccount{}, Code: 201},
		del + ns + "/serviceaccounts/{serviceaccount}":        {Summary: "Delete a service account (its tokens are void)", Tag: "serviceaccounts", Code: 204},
		post + ns + "/serviceaccounts/{serviceaccount}/token": {Summary: "Issue a service account token", Tag: "serviceaccounts", Req: api.TokenRequest{}, Resp: api.TokenResponse{}},
		get + ns + "/vms":                                     {Summary: "List VMs", Tag: "vms", Resp: api.List[api.VM]{}, Query: watched},
		post + ns + "/vms":                                    {Summary: "Deploy a VM (answers once it runs)", Tag: "vms", Req: api.DeployRequest{}, Resp: api.VM{}, Code: 201},
		get + ns + "/vms/{vm}":                                {Summary: "Get a VM", Tag: "vms", Resp: api.VM{}, Query: read},
		del + ns + "/vms/{vm}":                                {Summary: "Delete a VM", Tag: "vms", Code: 204},
		get + ns + "/vms/{vm}/console":                        {Summary: "The VM's screen: a websocket (subprotocol binary) carrying RFB with no security of its own; the token in Authorization, or from a browser as the subprotocol base64url.bearer.authorization.svc.<token, unpadded base64url>", Tag: "vms", Code: 101},
		post + ns + "/vms/{vm}/extend":                        {Summary: "Move a VM's expiry later (a VM deployed with a ttl)", Tag: "vms", Req: api.ExtendRequest{}, Resp: api.VM{}},
		post + ns + "/nodes/{name}/cordon":                    {Summary: "Cordon a node: it keeps its VMs and takes no new one", Tag: "nodes", Resp: api.Node{}},
		post + ns + "/nodes/{name}/uncordon":                  {Summary: "Put a cordoned node back into placement", Tag: "nodes", Resp: api.Node{}},
		del + ns + "/nodes/{name}":                            {Summary: "Remove a node from the cluster for good: its peer can never connect again (refused while VMs are on it)", Tag: "nodes", Code: 204},
		post + ns + "/nodes/{name}/approve":                   {Summary: "Approve a peer that joined pending (a join token without autoApprove): it may then hold the cluster secret, vote and take VMs", Tag: "nodes", Resp: api.Message{}},
		get + "/api/v1/cluster/ca":                            {Summary: "The cluster's CA certificate: what every peer's HTTPS certificate is signed by until one is uploaded (no token needed)", Tag: "cluster", Resp: api.ClusterCA{}},
		get + "/api/v1/cluster/join-tokens":                   {Summary: "List join tokens: ids, expiry and uses, never a secret", Tag: "cluster", Resp: api.List[api.JoinToken]{}},
		post + "/api/v1/cluster/join-tokens":                  {Summary: "Make a join token: a host runs svc agent --join ADDR --join-token TOKEN with it (the token is in this answer only)", Tag: "cluster", Req: api.JoinTokenRequest{}, Resp: api.JoinToken{}, Code: 201},
		del + "/api/v1/cluster/join-tokens/{id}":              {Summary: "Revoke a join token", Tag: "cluster", Code: 204},
		get + "/api/v1/cluster/snapshot": {Summary: "A snapshot of the cluster's state as of one Raft index, streamed (application/octet-stream; svc cluster snapshot save): every record, the CA and the keys, so keep it as a secret (audited). Taken on the leader: it holds every write acknowledged before the call, through any peer", Tag: "cluster", Stream: "application/octet-stream",
			Query: []queryParam{{"stale", "true: the state as the peer asked has applied it, without the leader (a cluster that lost its majority); it may lack the latest writes"}}},
		post + "/api/v1/cluster/snapshot":                {Summary: "Restore a snapshot of this cluster on every peer (application/octet-stream body, a file of svc cluster snapshot save): checked whole before anything is restored; the cluster's peers stay as they are. Through a follower the file streams on to the leader", Tag: "cluster", Body: "application/octet-stream", Resp: api.SnapshotRestored{}},
		post + "/api/v1/cluster/rotate-gossip-key":       {Summary: "Replace the gossip encryption key on every live peer, without a restart", Tag: "cluster", Resp: api.Message{}},
		get + "/api/v1/audit":                            {Summary: "The audit log: every API write (who, from which peer and address, method, path, outcome, when), oldest first", Tag: "cluster", Resp: api.List[api.AuditEntry]{}, Query: []queryParam{{"namespace", "only this namespace's writes"}, {"subject", "only this subject's (a user, or namespace:name)"}, {"since", "since a time (RFC 3339) or a duration ago (1h)"}, {"limit", "the newest N (default 1000, at most 100000)"}}},
		get + ns + "/quota":                              {Summary: "The namespace's quota and what its VMs take against it", Tag: "namespaces", Resp: api.NamespaceQuota{}, Query: read},
		get + ns + "/shared-storage":                     {Summary: "The namespace's shared storage: its bound per node and what its folder takes on each node (404 when it is off)", Tag: "namespaces", Resp: api.NamespaceSharedStorage{}, Query: read},
		put + ns + "/shared-storage":                     {Summary: "Turn the namespace's shared storage on, or change its bound per node (maxBytes, 1 GiB to 16 TiB): a folder on each node its VMs deployed with sharedStorage see at /shared", Tag: "namespaces", Req: api.SharedStorage{}, Resp: api.NamespaceSharedStorage{}},
		del + ns + "/shared-storage":                     {Summary: "Turn the namespace's shared storage off (409 while its VMs use it); its nodes remove its folders", Tag: "namespaces", Code: 204},
		post + ns + "/nodes/{name}/shared-storage/clear": {Summary: "Empty the namespace's shared folder on the node (409 while VMs there use it); runs on the node's peer", Tag: "nodes", Resp: api.Node{}},
		put + ns + "/quota":                              {Summary: "Set the namespace's quota (cpu, memory in GiB, vms; 0 or absent: no bound; all 0 removes it)", Tag: "namespaces", Req: api.Quota{}, Resp: api.NamespaceQuota{}},
		post + ns + "/vms/{vm}/run":                      {Summary: "Run a program in the VM's guest through its agent and answer its exit code and outputs (each cut at 1 MiB, flagged)", Tag: "vms", Req: api.RunRequest{}, Resp: api.RunResult{}},
		get + ns + "/vms/{vm}/run":                       {Summary: "Run a program in the VM's guest, streaming: a websocket (subprotocol binary); send the RunRequest as the first text message, receive outputs as binary messages (first byte 1 stdout, 2 stderr), then a RunResult or Status text message", Tag: "vms", Code: 101},
		get + ns + "/vms/{vm}/port-forward":              {Summary: "One TCP connection to a guest port: a websocket (subprotocol binary) carrying its bytes", Tag: "vms", Code: 101, Query: []queryParam{{"port", "the guest's TCP port (required)"}}},
		post + ns + "/vms/{vm}/resize":                   {Summary: "Grow the VM's disk (live while it runs; never shrinks)", Tag: "vms", Req: api.ResizeRequest{}, Resp: api.VM{}},
		post + ns + "/vms/{vm}/exec":                     {Summary: "Start, stop, suspend, resume or revert a VM", Tag: "vms", Req: api.ExecRequest{}, Resp: api.VM{}},
		post + ns + "/vms/{vm}/commit":                   {Summary: "Commit the VM's disk into its image", Tag: "vms", Req: api.CommitRequest{}, Resp: api.StatusURL{}},
		post + ns + "/vms/{vm}/save":                     {Summary: "Save the VM's disk as a new image", Tag: "vms", Req: api.SaveRequest{}, Resp: api.StatusURL{}},
		post + ns + "/vms/{vm}/push":                     {Summary: "Push the VM's disk to an OCI registry (a job)", Tag: "vms", Req: api.PushRequest{}, Resp: api.JobName{}},
		get + ns + "/vmconfigs":                          {Summary: "List VM configs", Tag: "vmconfigs", Resp: api.List[api.VMConfig]{}, Query: read},
		post + ns + "/vmconfigs":                         {Summary: "Create a VM config", Tag: "vmconfigs", Req: api.VMConfig{}, Resp: api.VMConfig{}, Code: 201},
		get + ns + "/vmconfigs/{vmconfig}":               {Summary: "Get a VM config", Tag: "vmconfigs", Resp: api.VMConfig{}, Query: read},
		del + ns + "/vmconfigs/{vmconfig}":               {Summary: "Delete a VM config", Tag: "vmconfigs", Code: 204},
		post + ns + "/images/{image}/cache":              {Summary: "Copy an image to nodes (a job)", Tag: "images", Req: api.ImageCacheRequest{}, Resp: api.JobAccepted{}, Code: 202},
		get + ns + "/images/{image}/cache":               {Summary: "List the nodes holding an image and the copies under way", Tag: "images", Resp: api.ImageCache{}, Query: read},
		del + ns + "/images/{image}/cache":               {Summary: "Free an image on a node", Tag: "images", Resp: api.ImageCache{}, Query: []queryParam{{"node", "the node to free the image on (required)"}}},
		patch + ns + "/vmconfigs/{vmconfig}":             {Summary: "Turn a VM config's booted templates on or off, and set its hot pool", Tag: "vmconfigs", Req: api.VMConfigChange{}, Resp: api.VMConfig{}},
		get + ns + "/images":                             {Summary: "List images", Tag: "images", Resp: api.List[api.Image]{}, Query: watched},
		post + ns + "/images":                            {Summary: "Generate an empty disk image", Tag: "images", Req: api.GenerateImageRequest{}, Resp: api.Image{}, Code: 201},
		get + ns + "/images/{image}":                     {Summary: "Get an image", Tag: "images", Resp: api.Image{}, Query: read},
		del + ns + "/images/{image}":                     {Summary: "Delete an image", Tag: "images", Code: 204},
		post + ns + "/images/{image}/copy":               {Summary: "Copy an image", Tag: "images", Req: api.CopyRequest{}, Resp: api.Image{}, Code: 201},
		post + ns + "/images/{image}/description":        {Summary: "Set an image's description", Tag: "images", Req: api.DescriptionRequest{}, Resp: api.Image{}},
		get + ns + "/images/{image}/download":            {Summary: "Download an image's disk (Range supported)", Tag: "images", Stream: "application/octet-stream"},
		post + ns + "/images/{image}/push":               {Summary: "Push an image to an OCI registry (a job)", Tag: "images", Req: api.PushRequest{}, Resp: api.JobName{}},
		post + ns + "/upload/image": {Summary: "Upload an image (multipart field image, or a raw body with ?name=)", Tag: "images", Upload: "image", Resp: api.Image{}, Code: 201,
			Query: []queryParam{{"name", "the image's name, for a raw (application/octet-stream) body"}}},
		get + ns + "/isos":                    {Summary: "List ISOs", Tag: "isos", Resp: api.List[api.ISO]{}, Query: read},
		get + ns + "/isos/{iso}":              {Summary: "Get an ISO", Tag: "isos", Resp: api.ISO{}, Query: read},
		del + ns + "/isos/{iso}":              {Summary: "Delete an ISO", Tag: "isos", Code: 204},
		post + ns + "/isos/{iso}/copy":        {Summary: "Copy an ISO", Tag: "isos", Req: api.CopyRequest{}, Resp: api.ISO{}, Code: 201},
		post + ns + "/isos/{iso}/description": {Summary: "Set an ISO's description", Tag: "isos", Req: api.DescriptionRequest{}, Resp: api.ISO{}},
		post + ns + "/upload/iso": {Summary: "Upload an ISO (multipart field iso, or a raw body with ?name=)", Tag: "isos", Upload: "iso", Resp: api.ISO{}, Code: 201,
			Query: []queryParam{{"name", "the ISO's name, for a raw (application/octet-stream) body"}}},
		get + ns + "/registrycredentials":              {Summary: "List registry credentials (never their passwords)", Tag: "registries", Resp: api.List[api.RegistryCredential]{}, Query: read},
		post + ns + "/registrycredentials":             {Summary: "Add or replace a registry credential", Tag: "registries", Req: api.RegistryCredentialRequest{}, Resp: api.RegistryCredential{}, Code: 201},
		del + ns + "/registrycredentials/{registry}":   {Summary: "Remove a registry credential", Tag: "registries", Code: 204},
		get + "/api/v1/remotecatalogs":                 {Summary: "The cluster's remote catalogs", Tag: "registries", Resp: api.RemoteCatalogs{}},
		put + "/api/v1/remotecatalogs":                 {Summary: "Replace the cluster's remote catalogs", Tag: "registries", Req: api.RemoteCatalogs{}, Resp: api.RemoteCatalogs{}},
		get + ns + "/remoteimages":                     {Summary: "List the remote images and ISOs of the catalogs", Tag: "registries", Resp: api.List[api.RemoteImage]{}},
		post + ns + "/remoteimages/{remoteimage}/pull": {Summary: "Pull a remote image into the namespace (a job)", Tag: "registries", Req: api.PullRequest{}, Resp: api.JobAccepted{}, Code: 202},
		post + ns + "/remoteisos/{remoteiso}/pull":     {Summary: "Pull a remote ISO into the namespace (a job)", Tag: "registries", Req: api.PullRequest{}, Resp: api.JobAccepted{}, Code: 202},
		get + ns + "/jobs":                             {Summary: "List push and pull jobs", Tag: "registries", Resp: api.List[api.Job]{}, Query: watched},
		get + ns + "/jobs/{job}":                       {Summary: "Get a job", Tag: "registries", Resp: api.Job{}, Query: read},
		post + "/api/v1/upload/cert":                   {Summary: "Upload the certificate every peer serves HTTPS with (multipart PEM fields cert and key)", Tag: "cluster", Upload: "cert", Resp: api.Message{}},
		get + "/api/v1/openapi.json":                   {Summary: "This document (no token needed)", Tag: "cluster", Stream: "application/json"},
		get + "/api/v1/swagger":                        {Summary: "The API explorer (no token needed)", Tag: "cluster", Stream: "text/html"},
		get + "/metrics":                               {Summary: "Prometheus metrics (no token needed)", Tag: "cluster", Stream: "text/plain"},

		get + ns + "/runnerpools":                          {Summary: "List the runner pools (CI jobs' VMs) with their status", Tag: "runner pools", Resp: api.List[api.RunnerPool]{}},
		post + ns + "/runnerpools":                         {Summary: "Create or replace a runner pool (GitHub Actions; credentials sealed, never answered)", Tag: "runner pools", Req: api.RunnerPoolRequest{}, Resp: api.RunnerPool{}, Code: 201},
		get + ns + "/runnerpools/{pool}":                   {Summary: "Get a runner pool and its status", Tag: "runner pools", Resp: api.RunnerPool{}},
		del + ns + "/runnerpools/{pool}":                   {Summary: "Delete a runner pool (its VMs are deleted)", Tag: "runner pools", Code: 204},
		get + ns + "/runnerpools/{pool}/jobs":              {Summary: "The jobs a runner pool took", Tag: "runner pools", Resp: api.List[api.RunnerJob]{}},
		post + ns + "/runnerpools/{pool}/webhook":          {Summary: "GitHub's workflow_job deliveries (no token: X-Hub-Signature-256 with the pool's secret)", Tag: "runner pools", Resp: api.Message{}},
		get + "/api/v1/auth/oidc":                          {Summary: "List the OpenID Connect providers people sign in with (never a client secret)", Tag: "sign-in", Resp: api.List[api.OIDCProvider]{}},
		put + "/api/v1/auth/oidc/{provider}":               {Summary: "Add (201) or replace (200) an OpenID Connect provider", Tag: "sign-in", Req: api.OIDCProviderRequest{}, Resp: api.OIDCProvider{}, Code: 201},
		del + "/api/v1/auth/oidc/{provider}":               {Summary: "Remove an OpenID Connect provider", Tag: "sign-in", Code: 204},
		get + "/api/v1/auth/signin":                        {Summary: "The providers one may sign in with (no token needed)", Tag: "sign-in", Resp: api.List[api.SignInProvider]{}},
		post + "/api/v1/auth/oidc/{provider}/start":        {Summary: "Start a browser sign-in (no token needed): where to send the browser", Tag: "sign-in", Req: api.SignInStartRequest{}, Resp: api.SignInStart{}},
		post + "/api/v1/auth/oidc/{provider}/callback":     {Summary: "Finish a browser sign-in with the provider's code and state and the code verifier the client kept: a personal token (1 hour)", Tag: "sign-in", Req: api.SignInCallback{}, Resp: api.SignedIn{}},
		get + "/api/v1/users":                              {Summary: "List the users: who root on a host named, and people who signed in with their provider, issuer and subject", Tag: "sign-in", Resp: api.List[api.User]{}},
		post + "/api/v1/auth/oidc/{provider}/device":       {Summary: "Start a device sign-in (RFC 8628; no token needed): the code to type and where", Tag: "sign-in", Resp: api.DeviceSignIn{}},
		post + "/api/v1/auth/oidc/{provider}/device/token": {Summary: "Poll a device sign-in: 202 while pending (waits up to 12 s), then a personal token", Tag: "sign-in", Req: api.DevicePoll{}, Resp: api.SignedIn{}},
	}
}
