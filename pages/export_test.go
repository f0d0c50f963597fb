package pages

// Fixtures shared with the external tests (the browser tests live outside
// the package: they run real scenarios, and the runner imports pages).
var (
	EvilHistory  = evilHistory
	EvilMeta     = evilMeta
	EvilScenario = evilScenario
	EvilLockKey  = evilLockKey
	EvilErr      = evilErr
	EvilKind     = evilKind
)

// Hostile text for porcupine's page.
var (
	EvilBankHistory = evilBankHistory
	EvilAcct        = evilAcct
	EvilValue       = evilValue
	EvilDetail      = evilDetail
)
