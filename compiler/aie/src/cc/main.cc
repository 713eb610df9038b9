// main.cc: runs the CPU stand-in of an AIE design (see aie_cpu.h).
//
//   aie_cpu [--data DIR] [--input NAME=FILE.npy]... --out-dir RES
//
// Initialises the global tensors as `wsp run` does (`load("x.npy")` relative to --data,
// `random(seed)` with wsp's generator, literals, zeros), runs the design and writes every
// output tensor as RES/NAME.npy.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "aie_cpu.h"
#include "wsp_aie.h"

extern const wsp_cpu::Design kDesign;

namespace {

[[noreturn]] void die(const std::string& m) {
  std::fprintf(stderr, "error: %s\n", m.c_str());
  std::exit(2);
}

std::string descr_of(const std::string& d) {
  if (d == "f16") return "<f2";
  if (d == "bf16") return "<u2";
  if (d == "f32") return "<f4";
  if (d == "f64") return "<f8";
  if (d == "i8") return "|i1";
  if (d == "i16") return "<i2";
  if (d == "i32") return "<i4";
  if (d == "i64") return "<i8";
  if (d == "u8") return "|u1";
  if (d == "u16") return "<u2";
  if (d == "u32") return "<u4";
  if (d == "u64") return "<u8";
  return "|b1";
}

bool is_float(const std::string& d) { return d == "f16" || d == "bf16" || d == "f32" || d == "f64"; }

// Stores the double `v` as element `i` of dtype `d` with wsp's conversion rules.
void put_double(const std::string& d, uint8_t* p, double v) {
  if (d == "f32") { float f = (float)v; std::memcpy(p, &f, 4); }
  else if (d == "f64") std::memcpy(p, &v, 8);
  else if (d == "f16") { uint16_t h = wsp_d2h(v); std::memcpy(p, &h, 2); }
  else if (d == "bf16") { uint16_t h = wsp_d2b(v); std::memcpy(p, &h, 2); }
  else if (d == "i8") { int8_t x = wsp_f2i<int8_t>(v); std::memcpy(p, &x, 1); }
  else if (d == "i16") { int16_t x = wsp_f2i<int16_t>(v); std::memcpy(p, &x, 2); }
  else if (d == "i32") { int32_t x = wsp_f2i<int32_t>(v); std::memcpy(p, &x, 4); }
  else if (d == "i64") { int64_t x = wsp_f2i<int64_t>(v); std::memcpy(p, &x, 8); }
  else if (d == "u8") { uint8_t x = wsp_f2i<uint8_t>(v); std::memcpy(p, &x, 1); }
  else if (d == "u16") { uint16_t x = wsp_f2i<uint16_t>(v); std::memcpy(p, &x, 2); }
  else if (d == "u32") { uint32_t x = wsp_f2i<uint32_t>(v); std::memcpy(p, &x, 4); }
  else if (d == "u64") { uint64_t x = wsp_f2i<uint64_t>(v); std::memcpy(p, &x, 8); }
  else *p = (v != 0.0) ? 1 : 0;
}

double get_double(const std::string& descr, const uint8_t* p) {
  if (descr == "<f2") { uint16_t h; std::memcpy(&h, p, 2); return wsp_h2f(h); }
  if (descr == "<f4") { float f; std::memcpy(&f, p, 4); return f; }
  double x; std::memcpy(&x, p, 8); return x;
}

uint64_t splitmix64(uint64_t& s) {
  s += 0x9e3779b97f4a7c15ull;
  uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// wsp's `random(seed)`: SplitMix64 pairs through Box-Muller, in f64.
void random_normal(uint64_t seed, const std::string& d, int es, uint64_t n, std::vector<uint8_t>& out) {
  uint64_t state = seed;
  const double scale = 1.0 / (double)(1ull << 53);
  const double pi = 3.141592653589793;
  uint64_t i = 0;
  while (i < n) {
    double u1 = (double)((splitmix64(state) >> 11) + 1) * scale;
    double u2 = (double)(splitmix64(state) >> 11) * scale;
    double r = std::sqrt(-2.0 * std::log(u1));
    double t = 2.0 * pi * u2;
    put_double(d, out.data() + i * es, r * std::cos(t));
    if (++i < n) put_double(d, out.data() + i * es, r * std::sin(t));
    ++i;
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) die("cannot open `" + path + "`");
  std::vector<uint8_t> b;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
  std::fclose(f);
  return b;
}

std::string header_value(const std::string& h, const std::string& key) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t c = h.find(':', k);
  size_t s = h.find_first_not_of(" ", c + 1);
  if (h[s] == '\'') return h.substr(s + 1, h.find('\'', s + 1) - s - 1);
  if (h[s] == '(') return h.substr(s + 1, h.find(')', s) - s - 1);
  return h.substr(s, h.find_first_of(",}", s) - s);
}

// Reads a C-order .npy of the tensor's shape; floats of another width convert with wsp's rules.
void load_npy(const std::string& path, const wsp_cpu::TensorInfo& t, std::vector<uint8_t>& out) {
  std::vector<uint8_t> b = read_file(path);
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) die("`" + path + "` is not a .npy file");
  size_t hl, start;
  if (b[6] == 1) { hl = b[8] | (b[9] << 8); start = 10; }
  else { hl = b[8] | (b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24); start = 12; }
  std::string h(b.begin() + start, b.begin() + start + hl);
  std::string descr = header_value(h, "descr");
  if (header_value(h, "fortran_order") != "False") die("`" + path + "`: only C order is supported");
  uint64_t n = 1;
  std::string shape = header_value(h, "shape");
  for (size_t p = 0; p < shape.size();) {
    size_t q = shape.find(',', p);
    std::string tok = shape.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (tok.find_first_of("0123456789") != std::string::npos) n *= std::stoull(tok);
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (n != t.elements) die("`" + path + "` has " + std::to_string(n) + " elements, tensor `" + t.name + "` has " + std::to_string(t.elements));
  const uint8_t* data = b.data() + start + hl;
  std::string want = descr_of(t.dtype);
  if (descr == want) {
    if (b.size() < start + hl + n * t.elem_size) die("`" + path + "` is truncated");
    std::memcpy(out.data(), data, n * t.elem_size);
    return;
  }
  if ((descr == "<f2" || descr == "<f4" || descr == "<f8") && is_float(t.dtype)) {
    int w = descr == "<f2" ? 2 : descr == "<f4" ? 4 : 8;
    if (b.size() < start + hl + n * w) die("`" + path + "` is truncated");
    for (uint64_t i = 0; i < n; ++i) put_double(t.dtype, out.data() + i * t.elem_size, get_double(descr, data + i * w));
    return;
  }
  die("`" + path + "` holds " + descr + ", tensor `" + t.name + "` is " + t.dtype);
}

void write_npy(const std::string& path, const wsp_cpu::TensorInfo& t, const std::vector<uint8_t>& data) {
  std::string shape;
  for (int i = 0; i < t.ndim; ++i) shape += std::to_string(t.shape[i]) + (t.ndim == 1 ? "," : (i + 1 < t.ndim ? ", " : ""));
  std::string dict = "{'descr': '" + descr_of(t.dtype) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  std::string header = dict + std::string(total - 10 - dict.size() - 1, ' ') + "\n";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) die("cannot write `" + path + "`");
  uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(header.size() & 0xff), (uint8_t)(header.size() >> 8)};
  std::fwrite(pre, 1, 10, f);
  std::fwrite(header.data(), 1, header.size(), f);
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = ".", out_dir;
  std::vector<std::pair<std::string, std::string>> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data_dir = argv[++i];
    else if (a == "--out-dir" && i + 1 < argc) out_dir = argv[++i];
    else if (a == "--input" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t eq = v.find('=');
      if (eq == std::string::npos) die("--input takes NAME=FILE.npy");
      inputs.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else die("usage: aie_cpu [--data DIR] [--input NAME=FILE.npy]... --out-dir RES");
  }
  if (out_dir.empty()) die("usage: aie_cpu [--data DIR] [--input NAME=FILE.npy]... --out-dir RES");
  const wsp_cpu::Design& d = kDesign;
  std::vector<std::vector<uint8_t>> tensors((size_t)d.n_tensors);
  for (int i = 0; i < d.n_tensors; ++i) {
    const wsp_cpu::TensorInfo& t = d.tensors[i];
    std::vector<uint8_t>& buf = tensors[i];
    buf.assign(t.elements * (uint64_t)t.elem_size, 0);
    std::string given;
    for (auto& in : inputs)
      if (in.first == t.name) given = in.second;
    if (!given.empty()) { load_npy(given, t, buf); continue; }
    switch (t.init) {
      case wsp_cpu::InitKind::Zeros: break;
      case wsp_cpu::InitKind::Bytes: std::memcpy(buf.data(), t.bytes, buf.size()); break;
      case wsp_cpu::InitKind::Repeat:
        for (uint64_t e = 0; e < t.elements; ++e) std::memcpy(buf.data() + e * t.elem_size, t.bytes, t.elem_size);
        break;
      case wsp_cpu::InitKind::Random: random_normal(t.seed, t.dtype, t.elem_size, t.elements, buf); break;
      case wsp_cpu::InitKind::Load: load_npy(data_dir + "/" + t.path, t, buf); break;
      case wsp_cpu::InitKind::Required: die(std::string("input `") + t.name + "` has no data: pass --input " + t.name + "=FILE.npy");
    }
  }
  wsp_cpu::Machine m(d, tensors);
  if (!m.run()) return 3;
  for (int i = 0; i < d.n_tensors; ++i)
    if (d.tensors[i].kind == 1) write_npy(out_dir + "/" + d.tensors[i].name + ".npy", d.tensors[i], tensors[i]);
  std::printf("ran %llu kernel calls on %d cores\n", (unsigned long long)m.calls(), d.n_cores);
  return 0;
}
