package api

// Image caches: copies of an image on chosen nodes ahead of the VMs that
// need it there (POST, GET and DELETE .../images/{image}/cache).

// Bounds of a cache request.
const (
	MaxCacheNodes = 256
	MaxCacheTags  = 16
)

// ImageCacheRequest is the body of POST .../images/{image}/cache: exactly
// one of the nodes named, the nodes carrying any of the tags, or every
// node of the namespace.
type ImageCacheRequest struct {
	Nodes []string `json:"nodes,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	All   bool     `json:"all,omitempty"`
}

// ImageCache answers GET .../images/{image}/cache.
type ImageCache struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
	// Nodes hold the image (namespace's nodes only).
	Nodes []string `json:"nodes"`
	// Copies are the copies to nodes under way.
	Copies []CacheCopy `json:"copies"`
}

// CacheCopy is a copy of an image to a node under way.
type CacheCopy struct {
	Job        string `json:"job"`
	Node       string `json:"node"`
	State      string `json:"state"`
	BytesDone  int64  `json:"bytesDone"`
	BytesTotal int64  `json:"bytesTotal"`
}
