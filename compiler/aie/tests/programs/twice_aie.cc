// The AIE core implementation of the extern kernel `twice` (extern.wsp): the signature every
// AIE kernel has (docs/backends.md): the task's input tiles packed in `in`, its output tiles in
// `out`, then each tile parameter's valid rows and columns. 2·a is exact, as a + a is.
#include <stdint.h>

extern "C" void wsp_twice(uint8_t* in, uint8_t* out, int32_t a_rows, int32_t a_cols,
                          int32_t c_rows, int32_t c_cols) {
  const float* a = (const float*)in;
  float* c = (float*)out;
  for (int32_t r = 0; r < c_rows && r < a_rows; ++r)
    for (int32_t k = 0; k < c_cols && k < a_cols; ++k) c[r * c_cols + k] = 2.0f * a[r * a_cols + k];
}
