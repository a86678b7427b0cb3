package rawdisk

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// copyBlock is the unit of a sparse copy: all-zero blocks become holes.
const copyBlock = 1 << 20

// CopySparse copies src to dst (a new file), leaving holes for blocks of
// zeros. On error dst is removed.
func CopySparse(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	return writeNew(dst, func(out *os.File) error {
		buf := make([]byte, copyBlock)
		for off := int64(0); off < st.Size(); off += copyBlock {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := in.ReadAt(buf, off)
			if err != nil && err != io.EOF {
				return fmt.Errorf("copy %s: %w", src, err)
			}
			if n > 0 && !allZero(buf[:n]) {
				if _, err := out.WriteAt(buf[:n], off); err != nil {
					return fmt.Errorf("copy to %s: %w", dst, err)
				}
			}
		}
		return out.Truncate(st.Size())
	})
}

// writeNew creates dst (which must not exist) and has fill write it; dst
// is removed when either fails.
func writeNew(dst string, fill func(*os.File) error) (err error) {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	return fill(out)
}

// Clone makes dst (a new file) a copy of src that shares its blocks where
// the file system can, else a sparse copy.
func Clone(ctx context.Context, src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("clone %s: %w", dst, fs.ErrExist)
	}
	if err := reflink(src, dst); err == nil {
		return nil
	}
	_ = os.Remove(dst) // what the failed clone left
	return CopySparse(ctx, src, dst)
}
