package signerbench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"
)

// Schema names the JSON layout; it changes only if a field changes meaning.
const Schema = "valnet.bench.signers/v1"

// Row is one measured (or skipped, or failed) operation. N == 0 means no
// measurement; Note then starts with FailedPrefix or NotAvailablePrefix.
type Row struct {
	Group   string  `json:"group"`
	Name    string  `json:"name"`
	Op      string  `json:"op"`
	N       int     `json:"n"`
	P50US   float64 `json:"p50_us"`
	P99US   float64 `json:"p99_us"`
	OpsPerS float64 `json:"ops_per_s"`
	Note    string  `json:"note"`
}

// Failed reports whether the row ran and came out wrong.
func (r Row) Failed() bool { return strings.HasPrefix(r.Note, FailedPrefix) }

// Host is where the numbers were measured.
type Host struct {
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	CPU    string `json:"cpu"`
	NumCPU int    `json:"num_cpu"`
	Go     string `json:"go"`
}

// Report is a whole run.
type Report struct {
	Schema       string    `json:"schema"`
	Title        string    `json:"title"`
	Started      time.Time `json:"started"`
	Host         Host      `json:"host"`
	MessageBytes int       `json:"message_bytes"` // size of the vote sign bytes signed
	Iterations   int       `json:"iterations"`
	DurationMS   int64     `json:"duration_ms"` // per-row cap; <= 0: none
	Rows         []Row     `json:"rows"`
}

func newReport(o Options) Report {
	return Report{
		Schema:  Schema,
		Title:   "valnet bench signers",
		Started: time.Now().UTC().Truncate(time.Second),
		Host: Host{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPU: cpuModel(),
			NumCPU: runtime.NumCPU(), Go: runtime.Version()},
		Iterations: o.Iterations,
		DurationMS: o.Duration.Milliseconds(),
		Rows:       []Row{},
	}
}

// Failed lists the rows that ran and came out wrong.
func (r Report) Failed() []Row {
	var f []Row
	for _, row := range r.Rows {
		if row.Failed() {
			f = append(f, row)
		}
	}
	return f
}

// JSON is the report as indented JSON.
func (r Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteTable writes the report as an aligned pipe table (it also reads as
// Markdown).
func (r Report) WriteTable(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, r.Title)
	h := r.Host
	fmt.Fprintf(bw, "host: %s/%s, %s, %d CPUs, %s\n", h.GOOS, h.GOARCH, h.CPU, h.NumCPU, h.Go)
	limit := "no time cap"
	if r.DurationMS > 0 {
		limit = fmt.Sprintf("at most %s", time.Duration(r.DurationMS)*time.Millisecond)
	}
	fmt.Fprintf(bw, "message: %d-byte CometBFT precommit sign bytes; %d iterations per row, %s; one op at a time\n\n",
		r.MessageBytes, r.Iterations, limit)

	table := [][]string{{"group", "name", "op", "n", "p50", "p99", "ops/s", "note"}}
	for _, row := range r.Rows {
		cells := []string{row.Group, row.Name, row.Op, fmt.Sprint(row.N), "-", "-", "-", row.Note}
		if row.N > 0 {
			cells[4], cells[5] = fmtUS(row.P50US), fmtUS(row.P99US)
			if row.OpsPerS > 0 {
				cells[6] = fmtRate(row.OpsPerS)
			}
		}
		table = append(table, cells)
	}
	width := make([]int, len(table[0]))
	for _, cells := range table {
		for i, c := range cells {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	// Numbers right-aligned, words left-aligned.
	right := []bool{false, false, false, true, true, true, true, false}
	line := func(cells []string) {
		bw.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if right[i] {
				c = pad + c
			} else {
				c += pad
			}
			bw.WriteString(" " + c + " |")
		}
		bw.WriteString("\n")
	}
	line(table[0])
	bw.WriteString("|")
	for i, wd := range width {
		dash := strings.Repeat("-", wd+2)
		if right[i] {
			dash = dash[:wd+1] + ":"
		}
		bw.WriteString(dash + "|")
	}
	bw.WriteString("\n")
	for _, cells := range table[1:] {
		line(cells)
	}
	return bw.Flush()
}

// fmtUS prints a duration given in µs with three significant digits in
// the unit that reads best. Overhead rows may be negative: noise.
func fmtUS(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 1e6:
		return sig3(v/1e6) + " s"
	case a >= 1e3:
		return sig3(v/1e3) + " ms"
	default:
		return sig3(v) + " µs"
	}
}

func sig3(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtRate(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return sig3(v)
}

// cpuModel is the first "model name" of /proc/cpuinfo (Linux x86, most
// arm64 kernels), else "unknown CPU".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown CPU"
}
