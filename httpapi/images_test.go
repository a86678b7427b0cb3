package httpapi

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// diskImage returns the bytes of a small qcow2 made with qemu-img.
func diskImage(t *testing.T) []byte {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") == "1" {
			t.Fatal("qemu-img missing")
		}
		t.Skip("qemu-img missing: run scripts/install-deps.sh")
	}
	p := filepath.Join(t.TempDir(), "d.qcow2")
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", p, "16M").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// multipartUpload builds an upload whose fields come in the given order
// ("file" stands for the file part).
func multipartUpload(t *testing.T, data []byte, fields ...[2]string) (string, *bytes.Buffer) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range fields {
		if f[0] == "file" {
			w, _ := mw.CreateFormFile("image", "disk.qcow2")
			_, _ = w.Write(data)
			continue
		}
		_ = mw.WriteField(f[0], f[1])
	}
	_ = mw.Close()
	return mw.FormDataContentType(), &body
}

func uploadRequest(t *testing.T, h http.Handler, ctype string, body *bytes.Buffer) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/svc-default/upload/image", body)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+adminToken(t))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// Two uploads of the same bytes: the valid one is about to be recorded when
// the other, whose bad name came after the file, is refused. The refused
// one's clean-up must leave the valid one's blob alone.
func TestUpload_refused_upload_keeps_a_concurrent_uploads_blob(t *testing.T) {
	data := diskImage(t)
	b := newFakeBackend(t, true)
	holding, release := make(chan struct{}), make(chan struct{})
	b.beforeApply = func(typ raftfsm.Type) {
		if typ == raftfsm.TypeImageCreate {
			close(holding)
			<-release
		}
	}
	h := New(fakeConfig(b, Config{})).Handler()
	valid := make(chan *httptest.ResponseRecorder)
	go func() {
		ct, body := multipartUpload(t, data, [2]string{"name", "good"}, [2]string{"file"})
		valid <- uploadRequest(t, h, ct, body)
	}()
	<-holding
	b.beforeApply = nil
	ct, body := multipartUpload(t, data, [2]string{"file"}, [2]string{"name", "bad/name"})
	if w := uploadRequest(t, h, ct, body); w.Code != http.StatusBadRequest {
		t.Fatalf("bad name: %d %s", w.Code, w.Body)
	}
	close(release)
	if w := <-valid; w.Code != http.StatusCreated {
		t.Fatalf("valid upload: %d %s", w.Code, w.Body)
	}
	img, ok := b.FSM().Image(api.DefaultNamespace, "good")
	if !ok || !b.images.Has(img.Digest) {
		t.Fatalf("the recorded image %+v has no blob on disk", img)
	}
}

func TestUpload_refusals_leave_nothing(t *testing.T) {
	data := diskImage(t)
	text := []byte("hello\n")
	cases := []struct {
		name     string
		data     []byte
		fields   [][2]string
		wantCode int
	}{
		{name: "bad name after the file", data: data, fields: [][2]string{{"file"}, {"name", "a/b"}}, wantCode: 400},
		{name: "taken name after the file", data: data, fields: [][2]string{{"file"}, {"name", "taken"}}, wantCode: 409},
		{name: "taken name before the file", data: data, fields: [][2]string{{"name", "taken"}, {"file"}}, wantCode: 409},
		{name: "a 6-byte text file", data: text, fields: [][2]string{{"name", "notes"}, {"file"}}, wantCode: 400},
		{name: "no file", fields: [][2]string{{"name", "x"}}, wantCode: 400},
		{name: "two files", data: data, fields: [][2]string{{"name", "x"}, {"file"}, {"file"}}, wantCode: 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newFakeBackend(t, true)
			h := New(fakeConfig(b, Config{})).Handler()
			// "taken" holds other bytes, so a refused upload of data would leave
			// its own blob behind if it were not cleaned up.
			other := append([]byte(nil), data...)
			other = append(other, make([]byte, 512)...)
			ct, body := multipartUpload(t, other, [2]string{"name", "taken"}, [2]string{"file"})
			if w := uploadRequest(t, h, ct, body); w.Code != http.StatusCreated {
				t.Fatalf("setup: %d %s", w.Code, w.Body)
			}
			before, _ := b.images.Digests()
			ct, body = multipartUpload(t, c.data, c.fields...)
			w := uploadRequest(t, h, ct, body)
			if w.Code != c.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, c.wantCode, w.Body)
			}
			after, _ := b.images.Digests()
			if len(after) != len(before) {
				t.Fatalf("blobs %v, before %v", after, before)
			}
			if tmp, _ := os.ReadDir(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(b.images.Path(before[0])))), "tmp")); len(tmp) != 0 {
				t.Fatalf("staging files left: %d", len(tmp))
			}
			if n := len(b.FSM().Images(api.DefaultNamespace)); n != 1 {
				t.Fatalf("%d images recorded", n)
			}
		})
	}
}
