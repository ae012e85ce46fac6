package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", "s3cret\r\n", 0o600)
	open := file("open", "s3cret\n", 0o644)
	empty := file("empty", "\n", 0o600)
	t.Setenv("SECRET_TEST_SET", "from-env")
	pin := Source{What: "PIN", EnvKey: "pin_env", FileKey: "pin_file"}
	tests := []struct {
		name, env, file, want, wantErr string
	}{
		{"environment", "SECRET_TEST_SET", "", "from-env", ""},
		{"unset variable", "SECRET_TEST_UNSET", "", "", "pin_env SECRET_TEST_UNSET is not set"},
		{"file, newline dropped", "", good, "s3cret", ""},
		{"file others can read", "", open, "", "PIN file " + open + " is readable by others (chmod 600)"},
		{"empty file", "", empty, "", "PIN file " + empty + " is empty"},
		{"missing file", "", filepath.Join(dir, "nope"), "", "PIN file: "},
		{"both", "SECRET_TEST_SET", good, "", "PIN: give pin_env or pin_file, not both"},
		{"neither", "", "", "", "PIN: give pin_env or pin_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pin.Read(tt.env, tt.file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
