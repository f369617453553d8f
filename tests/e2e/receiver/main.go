// Command receiver is the OTLP profiles endpoint of the end-to-end tests: it accepts what the
// OpenTelemetry eBPF profiler exports over gRPC and writes one JSON line per exported sample, so
// that the tests can count, per process and thread, the samples linked to each trace.
//
// usage: receiver -port-file FILE -out FILE
//
// It listens on 127.0.0.1 on a port the kernel picks and writes that port to -port-file (through
// a rename, so a reader never sees half of it) only once it is listening: the profiler, started
// after the file appears, never finds the endpoint missing.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	// The profiler compresses its requests with gzip: without the codec registered every export
	// fails with "grpc: Decompressor is not installed for grpc-encoding".
	_ "google.golang.org/grpc/encoding/gzip"
)

// record is one exported sample as the tests read it. Count is the number of events the sample
// stands for (the profiler folds events with the same stack, thread and link into one sample
// with one timestamp each).
type record struct {
	PID     int64  `json:"pid"`
	Service string `json:"service,omitempty"`
	Exe     string `json:"exe,omitempty"`
	TID     int64  `json:"tid"`
	Thread  string `json:"thread,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
	Count   int    `json:"count"`
	Type    string `json:"type"`
	// the events' times (Unix ns): the tests check that unlinked ones were taken before the
	// profiler attached to the process, and how late linked ones were reported
	Times []uint64 `json:"times,omitempty"`
}

type server struct {
	pprofileotlp.UnimplementedGRPCServer
	mu       sync.Mutex
	out      *bufio.Writer
	requests int
}

func (s *server) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	recs := flatten(req.Profiles())
	s.mu.Lock()
	defer s.mu.Unlock()
	enc := json.NewEncoder(s.out)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return pprofileotlp.NewExportResponse(), err
		}
	}
	// each request's samples reach the file whole before the next request is answered: a test
	// polling the file sees either none or all of a request
	if err := s.out.Flush(); err != nil {
		return pprofileotlp.NewExportResponse(), err
	}
	// one line per request on stderr: the tests count export cycles with it
	s.requests++
	log.Printf("export %d: %d samples", s.requests, len(recs))
	return pprofileotlp.NewExportResponse(), nil
}

// flatten turns the dictionary-indexed profiles into one record per sample.
func flatten(p pprofile.Profiles) []record {
	dict := p.Dictionary()
	strs := dict.StringTable()
	str := func(i int32) string {
		if i < 0 || int(i) >= strs.Len() {
			return ""
		}
		return strs.At(int(i))
	}
	attrs := dict.AttributeTable()
	links := dict.LinkTable()
	var recs []record
	rps := p.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		base := record{}
		rattrs := rp.Resource().Attributes()
		if v, ok := rattrs.Get("process.pid"); ok {
			base.PID = v.Int()
		}
		if v, ok := rattrs.Get("service.name"); ok {
			base.Service = v.Str()
		}
		if v, ok := rattrs.Get("process.executable.path"); ok {
			base.Exe = v.Str()
		}
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			profs := sps.At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				prof := profs.At(k)
				typ := str(prof.SampleType().TypeStrindex())
				samples := prof.Samples()
				for n := 0; n < samples.Len(); n++ {
					s := samples.At(n)
					r := base
					r.Type = typ
					r.Count = s.TimestampsUnixNano().Len()
					if r.Count == 0 {
						r.Count = 1
					}
					ai := s.AttributeIndices()
					for a := 0; a < ai.Len(); a++ {
						idx := int(ai.At(a))
						if idx < 0 || idx >= attrs.Len() {
							continue
						}
						kv := attrs.At(idx)
						switch str(kv.KeyStrindex()) {
						case "thread.id":
							r.TID = kv.Value().Int()
						case "thread.name":
							r.Thread = kv.Value().Str()
						}
					}
					// index 0 is the empty link: no trace
					if li := int(s.LinkIndex()); li > 0 && li < links.Len() {
						l := links.At(li)
						r.TraceID = hexTrace(l.TraceID())
						r.SpanID = hexSpan(l.SpanID())
					}
					r.Times = s.TimestampsUnixNano().AsRaw()
					recs = append(recs, r)
				}
			}
		}
	}
	return recs
}

func hexTrace(t pcommon.TraceID) string { return hex.EncodeToString(t[:]) }
func hexSpan(s pcommon.SpanID) string   { return hex.EncodeToString(s[:]) }

func main() {
	portFile := flag.String("port-file", "", "write the listening port here once listening")
	outPath := flag.String("out", "", "append one JSON line per exported sample here")
	flag.Parse()
	if *portFile == "" || *outPath == "" {
		fmt.Fprintln(os.Stderr, "usage: receiver -port-file FILE -out FILE")
		os.Exit(2)
	}
	f, err := os.OpenFile(*outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	tmp := *portFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d\n", port)), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, *portFile); err != nil {
		log.Fatal(err)
	}
	gs := grpc.NewServer()
	srv := &server{out: bufio.NewWriter(f)}
	pprofileotlp.RegisterGRPCServer(gs, srv)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		gs.Stop()
	}()
	if err := gs.Serve(lis); err != nil {
		log.Fatal(err)
	}
	f.Close()
}
