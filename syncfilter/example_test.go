package syncfilter_test

import (
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/syncfilter"
)

func Example() {
	params, err := syncfilter.NewParams(100_000, 0.01) // 100k ids at 1%
	if err != nil {
		panic(err)
	}
	f, err := syncfilter.New(params)
	if err != nil {
		panic(err)
	}
	defer f.Close()

	ctx := context.Background()
	if err := f.Add(ctx, "caf\u00e9-42"); err != nil {
		panic(err)
	}
	for _, id := range []string{"caf\u00e9-42", "cafe\u0301-42", "caf\u00e9-43"} {
		maybe, err := f.MightContain(id)
		if err != nil {
			panic(err)
		}
		if maybe {
			fmt.Printf("%+q: maybe, confirm in the database\n", id)
		} else {
			fmt.Printf("%+q: absent, fetch it\n", id)
		}
	}
	// Output:
	// "caf\u00e9-42": maybe, confirm in the database
	// "cafe\u0301-42": maybe, confirm in the database
	// "caf\u00e9-43": absent, fetch it
}

func ExampleNewParams() {
	p, err := syncfilter.NewParams(1_000_000, 0.01)
	if err != nil {
		panic(err)
	}
	fmt.Printf("m = %d bits (%.2f per key), k = %d, %d KiB\n", p.M, p.BitsPerKey(1_000_000), p.K, p.Bytes()/1024)
	// Output:
	// m = 9895936 bits (9.90 per key), k = 6, 1208 KiB
}

func ExampleFilter_MightContainBatch() {
	p, _ := syncfilter.NewParams(1000, 0.001)
	f, _ := syncfilter.New(p)
	defer f.Close()

	ctx := context.Background()
	if err := f.AddBatch(ctx, []string{"id-1", "id-2", "id-3"}); err != nil {
		panic(err)
	}
	page := []string{"id-2", "id-9", "id-3", "id-10"}
	maybe, err := f.MightContainBatch(nil, page)
	if err != nil {
		panic(err)
	}
	fmt.Println(maybe)
	fmt.Printf("%+v\n", f.Counters())
	// Output:
	// [true false true false]
	// {Queries:4 Negatives:2 Maybes:2}
}
