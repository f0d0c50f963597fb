// Package pages draws the self-contained HTML pages of a store: a run's
// report (timeline, charts, the checker's findings in words), the store's
// index and a suite's matrix. Each is written beside the data it is drawn
// from, which package runstore keeps: Write a run's record and report,
// WriteIndex the index, WriteMatrix the matrix.
package pages

import (
	"bytes"
	"errors"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/runstore"
)

// Write stores a run's verdict in dir: result.json, report.html and, when
// the result is Invalid, porcupine.html with porcupine's view of the failing
// window. When dir is a run folder of a store (made by runstore.NewRunDir),
// the store's index.html is regenerated too. events is the run's history
// (for the report's tooltips; it may be nil). A failed visualization does
// not stop the report from being written; its error is returned with the
// others.
func Write(dir string, meta runstore.Meta, events []history.Event, res checker.Result) error {
	err := WriteRun(dir, meta, events, res)
	// A run folder made by NewRunDir sits in a store whose index lists it;
	// refresh the index so the new verdict shows at once.
	if store, ok := runstore.StoreOf(dir); ok {
		err = errors.Join(err, WriteIndex(store))
	}
	return err
}

// WriteRun is Write without the store's index, for a caller that writes
// many runs into one store and refreshes its index itself (a suite): the
// index lists every run of the store, and rebuilding it after each of
// thousands of plays cost more than the plays' own reports.
func WriteRun(dir string, meta runstore.Meta, events []history.Event, res checker.Result) error {
	var errs []error
	hasPorcupine, err := runstore.WritePorcupine(dir, res)
	if err != nil {
		errs = append(errs, err)
	}
	rec := runstore.NewRecord(dir, meta, res, hasPorcupine)
	var page bytes.Buffer
	if err := renderReport(&page, dir, rec, events); err != nil {
		errs = append(errs, err)
	} else if err := runstore.WriteFile(dir, runstore.ReportFile, page.Bytes()); err != nil {
		errs = append(errs, err)
	}
	if err := runstore.WriteRecord(dir, rec, events); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
