// Command receiver is the endpoint of the README's webhooks quickstart: it
// verifies each delivery with the Standard Webhooks library (the
// signature, under the endpoint's secret, and the timestamp), answers
// 204, and prints the delivery's webhook-id and payload.
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	// The whsec_... secret createWebhook answered (once).
	wh, err := standardwebhooks.NewWebhook(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	log.Print("receiving on http://127.0.0.1:9000/hooks")
	log.Fatal(http.ListenAndServe("127.0.0.1:9000", handler(wh, os.Stdout)))
}

// handler prints each verified delivery to out and answers 204; one that
// does not verify gets 400, and nothing is printed.
func handler(wh *standardwebhooks.Webhook, out io.Writer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || wh.Verify(body, r.Header) != nil {
			http.Error(w, "unverified", http.StatusBadRequest)
			return
		}
		// Delivery is at least once: de-duplicate on webhook-id.
		fmt.Fprintf(out, "%s %s\n", r.Header.Get("webhook-id"), body)
		w.WriteHeader(http.StatusNoContent)
	})
}
