package swarm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

const d1 = "sha256:0000000000000000000000000000000000000000000000000000000000000001"

func TestPlan_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan Plan
		ok   bool
	}{
		{"contiguous", Plan{Digest: d1, Size: 8, Chunks: []Chunk{{Offset: 0, Size: 4, Digest: d1}, {Offset: 4, Size: 4, Digest: d1}}}, true},
		{"a hole between", Plan{Digest: d1, Size: 12, Chunks: []Chunk{{Offset: 0, Size: 4, Digest: d1}, {Offset: 8, Size: 4, Digest: d1}}}, true},
		{"no chunks (all zeros)", Plan{Digest: d1, Size: 1 << 30}, true},
		{"overlap", Plan{Digest: d1, Size: 8, Chunks: []Chunk{{Offset: 0, Size: 5, Digest: d1}, {Offset: 4, Size: 4, Digest: d1}}}, false},
		{"past the end", Plan{Digest: d1, Size: 6, Chunks: []Chunk{{Offset: 4, Size: 4, Digest: d1}}}, false},
		{"too big a chunk", Plan{Digest: d1, Size: 1 << 30, Chunks: []Chunk{{Offset: 0, Size: MaxChunk + 1, Digest: d1}}}, false},
		{"bad chunk digest", Plan{Digest: d1, Size: 4, Chunks: []Chunk{{Offset: 0, Size: 4, Digest: "md5:x"}}}, false},
		{"bad blob digest", Plan{Digest: "x", Size: 4}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.plan.Validate()
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrBadPlan) {
				t.Fatalf("Validate: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestCut_leaves_zeros_out(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b")
	data := make([]byte, 5<<20) // chunks of 1 MiB: only the third is not zeros
	data[2<<20+7] = 1
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := Cut(context.Background(), p, d1)
	if err != nil || plan.Size != 5<<20 || len(plan.Chunks) != 1 || plan.Chunks[0].Offset != 2<<20 || plan.Validate() != nil {
		t.Fatalf("%+v %v", plan, err)
	}
}

func TestChunkSizeFor(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{1, MinChunk}, {64 << 20, MinChunk}, {512 << 20, 8 << 20}, {60 << 30, MaxChunk},
	} {
		if got := ChunkSizeFor(tc.size); got != tc.want {
			t.Errorf("ChunkSizeFor(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
