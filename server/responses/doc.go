// Package responses serves OpenAI's Responses API, stateful: POST
// /v1/responses (streamed or not, in the background or not), GET and
// DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items and POST
// /v1/responses/{id}/cancel. Like every dialect it decodes its wire
// format into infer.Requests and encodes infer's streams; it imports
// neither the engine, the scheduler nor another dialect. Stored responses (store, the
// default) live in the job database (server/jobs), owned by the API key
// that made them, until they expire; previous_response_id continues a
// stored conversation; background responses run as durable jobs of type
// "response".
package responses
