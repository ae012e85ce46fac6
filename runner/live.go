package runner

import (
	"errors"
	"io"
	"os"
	"sync/atomic"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// liveSummary summarizes a simulated run's events.jsonl while the model
// writes it, on the second core, so the report does not start reading
// the file only once the model is done (a second of global175's 13). It
// reads the file's own bytes: the Writer tees each write of whole lines
// into a pipe once the file has taken it (eventlog.Writer.Tee). Its
// summarizer stands in for the file's only when it read as many bytes
// as the file holds, in one exact pass (results.SummarizeLive);
// otherwise the report reads the file, as `valnet report` does.
//
// Only a model's run summarizes live: on real nodes the same work would
// take the CPU of the nodes being measured.
type liveSummary struct {
	pw   *io.PipeWriter
	read atomic.Int64 // bytes the summarizer took off the pipe
	done chan struct{}
	z    *results.Summarizer
}

// errLiveOver ends the tee once the live summarizer stopped reading.
var errLiveOver = errors.New("live summary over")

func startLiveSummary(w *eventlog.Writer) *liveSummary {
	pr, pw := io.Pipe()
	l := &liveSummary{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		z, err := results.SummarizeLive(countingReader{pr, &l.read})
		// A summarizer that stopped early (a line it could not read)
		// must not leave the writer blocked on the pipe.
		pr.CloseWithError(errLiveOver)
		if err == nil {
			l.z = z
		}
	}()
	w.Tee(pw)
	return l
}

// result is the live summarizer once the writer is closed: nil (read the
// file) unless it read all of events.jsonl at path. A nil liveSummary
// has none.
func (l *liveSummary) result(path string) *results.Summarizer {
	if l == nil {
		return nil
	}
	l.pw.Close()
	<-l.done
	fi, err := os.Stat(path)
	if err != nil || l.z == nil || l.read.Load() != fi.Size() {
		return nil
	}
	return l.z
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
