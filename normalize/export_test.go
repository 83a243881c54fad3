package normalize

// For the external tests: referenceNFC (compose_test.go) and allAssigned.
var (
	ReferenceNFC = referenceNFC
	AllAssigned  = allAssigned
)
