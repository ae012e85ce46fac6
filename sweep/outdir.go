package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ClaimOutDir is the one rule for the output directory of sweep,
// threshold and crosscheck: a new or empty directory is made, and one that holds the
// command's record (file) is resumed only if that record is the same
// search, which differs says by naming what is not the same ("" when
// nothing). what names the command in messages. found reports whether a
// record was there (then it is resumed).
func ClaimOutDir(dir, file, what string, differs func(record []byte) (string, error)) (found bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		entries, rerr := os.ReadDir(dir)
		if rerr == nil && len(entries) > 0 {
			return false, fmt.Errorf("--out %s is not empty and holds no %s: a %s goes into a new directory or resumes its own (choose another --out)", dir, file, what)
		}
		if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return false, rerr
		}
		return false, os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return false, err
	}
	diff, err := differs(data)
	if err != nil {
		return true, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
	}
	if diff != "" {
		return true, fmt.Errorf("--out %s holds another %s (%s); its runs would not be comparable: choose another --out or remove it", dir, what, diff)
	}
	return true, nil
}
