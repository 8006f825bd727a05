// Compiles llama.cpp's tools/mtmd/mtmd.cpp from the pinned module (found
// through the llama.cpp include directory of CGO_CPPFLAGS).
#include "../tools/mtmd/mtmd.cpp"
