package checker

import (
	"splitbrain/checker/lease"
	"splitbrain/checker/liveness"
	"splitbrain/checker/paired"
	"splitbrain/checker/resource"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// The names of the checker's packages that callers meet in a Result, so
// that they need only this package.

// Verdicts (package verdict).
type (
	Verdict  = verdict.Verdict
	Property = verdict.Property
)

const (
	Valid   = verdict.Valid
	Invalid = verdict.Invalid
	Unknown = verdict.Unknown
)

// MaxViolations caps the violations a Result lists; ViolationCount has the
// total.
const MaxViolations = verdict.MaxViolations

// Property names, as Result.Properties lists them.
const (
	PropLeaseLock       = lease.LeaseLock
	PropTokens          = lease.Tokens
	PropCriticalSection = lease.CriticalSection
	PropCounter         = resource.Counter
	PropBank            = resource.Bank
	PropSet             = resource.Set
	PropFencing         = resource.Fencing
	PropDeadlockFreedom = liveness.DeadlockFreedom
	PropFaultTolerance  = liveness.FaultTolerance
)

// The history as the checkers read it (package paired).
type (
	Belief       = paired.Belief
	Attempt      = paired.Attempt
	KeyInfo      = paired.KeyInfo
	FaultWindow  = paired.FaultWindow
	OutsideWrite = paired.OutsideWrite
)

// How a belief interval ended, and an acquire that never completed.
const (
	EndDeadline    = paired.EndDeadline
	EndRelease     = paired.EndRelease
	EndReacquire   = paired.EndReacquire
	EndOpen        = paired.EndOpen
	EndLastOp      = paired.EndLastOp
	OutcomePending = paired.OutcomePending
)

// The lock's own properties (package lease).
type (
	Violation      = lease.Violation
	IntervalResult = lease.IntervalResult
	TokenResult    = lease.TokenResult
	TokenViolation = lease.TokenViolation
	TokenGrant     = lease.TokenGrant
)

// The lock's liveness promises and availability figures (package
// liveness).
type (
	LivenessResult    = liveness.Result
	LivenessPromise   = liveness.Promise
	LivenessViolation = liveness.Violation
	Availability      = liveness.Availability
	Stretch           = liveness.Stretch
	Heal              = liveness.Heal
)

// The resource properties (package resource).
type (
	Write            = resource.Write
	CounterResult    = resource.CounterResult
	CounterKey       = resource.CounterKey
	LostUpdate       = resource.LostUpdate
	BankResult       = resource.BankResult
	BankKey          = resource.BankKey
	BankViolation    = resource.BankViolation
	LostTransfer     = resource.LostTransfer
	StaleBalance     = resource.StaleBalance
	SetResult        = resource.SetResult
	SetKey           = resource.SetKey
	SetLoss          = resource.SetLoss
	FencingResult    = resource.FencingResult
	FencingViolation = resource.FencingViolation
)

// Seconds formats a time or duration in nanoseconds the way reports do:
// "2.31s", "0.740s", "3.2ms".
func Seconds(ns int64) string { return paired.Seconds(ns) }

// FaultLabel names a fault compactly, e.g. "clock-jump n3 +5s".
func FaultLabel(f history.Fault) string { return paired.FaultLabel(f) }

// SortNatural sorts names so that "c2" comes before "c10".
func SortNatural(names []string) { paired.SortNatural(names) }

// EndText says in words why a belief ended (Belief.EndReason).
func EndText(reason string) string { return paired.EndText(reason) }
