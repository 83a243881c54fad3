package normalize_test

import (
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/normalize"
)

func ExampleString() {
	nfd := "cafe\u0301" // "café" with a combining acute accent
	key, err := normalize.String(nfd)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+q -> %+q (%d bytes)\n", nfd, key, len(key))

	_, err = normalize.String("id-\xff")
	fmt.Println(err, errors.Is(err, normalize.ErrInvalidUTF8))
	// Output:
	// "cafe\u0301" -> "caf\u00e9" (5 bytes)
	// normalize key: invalid UTF-8 at byte offset 3 true
}
