// Package atomicfile writes files so that a reader (a CI step, a browser,
// a later valnet report) sees the old content or the new, never half.
package atomicfile

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
)

// Write writes data to path through a temporary file in the same
// directory, renamed over path once complete.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}

// WriteJSON writes v as indented JSON, atomically: the records valnet
// keeps for people and tools (sweep.json, threshold.json,
// crosscheck.json). Text is not HTML-escaped (a target reads "<= 0.05",
// not "\u003c= 0.05").
func WriteJSON(path string, perm os.FileMode, v any) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	})
}

// WriteWith streams what fill writes into path, atomically: on any error
// the temporary file is removed and path is left as it was.
func WriteWith(path string, perm os.FileMode, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = fill(f)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
