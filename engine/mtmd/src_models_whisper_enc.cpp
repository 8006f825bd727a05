// Compiles llama.cpp's tools/mtmd/models/whisper-enc.cpp (a CLIP graph) from the pinned module.
#include "../tools/mtmd/models/whisper-enc.cpp"
