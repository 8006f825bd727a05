package infer

import (
	"fmt"
)

// ParamError is a request field out of its range or of the wrong shape:
// Param names the field, Message says what was wrong (in OpenAI's words);
// each dialect answers it in its own error shape.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return e.Message }

func paramErrorf(param, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Message: fmt.Sprintf(format, args...)}
}
