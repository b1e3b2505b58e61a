#pragma once
// Banded execution as a graph transform: below the liveness bound of the graph as built.
//
// GPEN's stages above some resolution R are spatially local once the styles are known: the
// encoder's high-resolution convs and blurs, and the decoder's modulated convs, transposed conv +
// blur, noise-injection inputs and to_rgb skips. The transform runs them in horizontal bands of
// rows, so only one band's tensors are alive at a time:
//  - phase A: the encoder from the input down to e_R, band by band, writing rows of e_R (and of
//    the encoder features chosen to be kept) into their full-size buffers;
//  - the global part unchanged and whole: the encoder below R, the style MLP, the decoder up to R;
//  - phase B: the decoder from R to the output, band by band, each band writing its rows of the
//    output; the encoder features above R that are not kept are recomputed inside the band from
//    the input rows they depend on (rematerialisation per band).
// Halos come from each op's footprint: a band computes exactly the rows its consumers need, so
// ops with explicit padding (conv2d, upfirdn2d, and the same-padded modulated conv through its
// row pads, ModConvParams::pad_top) get per-band pads that reproduce the full op's row indexing
// (negative pads crop), and transposed modulated convs crop their own output to the rows asked
// for (ModConvParams::crop_top / crop_bottom). Every output pixel is then the same sum of the same
// products in the same order as in the whole graph, so the output is bit-identical (tested on
// the CPU in fp32 and in the CUDA emulator in fp16). Bands are views of rows of NHWC tensors
// (Graph::slice_rows): the executor and kernels run them unchanged.
#include <map>
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen {

struct BandingSpec {
  int band_res = 0;  // R: stages above this resolution run in bands (a power of two below the output)
  int keep_res = 0;  // encoder features at resolutions in (R, keep_res] are kept whole; 0 = R (recompute all)
  // Row boundaries of the output's bands: 0 = b[0] < b[1] < ... < b[n] = output height. Empty:
  // `bands` bands of (nearly) equal height.
  std::vector<int64_t> boundaries;
  int bands = 0;
  // Halos: false = every band recomputes the rows of its neighbours it needs; true = bands run
  // top to bottom and each stage carries the rows the next band reads (line buffers,
  // engine/plan/banding_carry.h): each output row of every op is computed once, for copies of a
  // few rows per stage per band.
  bool carry = false;
  // With carried halos: a modconv computes at least this many of its own rows whenever it runs,
  // so at the lower resolutions it runs every few bands (fewer, larger calls); the rows ahead
  // are carried to the bands that read them. 0: as many rows as the band needs.
  int stage_rows = 0;
};

struct BandingResult {
  bool applied = false;
  int band_res = 0, keep_res = 0, bands = 0, encoder_bands = 0;
  std::vector<int64_t> boundaries;  // of the output rows
  int64_t max_band_rows = 0;        // rows of the output's tallest band
  int64_t max_computed_rows = 0;    // most rows any banded op computes at the output resolution
  double flops_before = 0, flops_after = 0;
  double extra_flops_fraction() const { return flops_before > 0 ? flops_after / flops_before - 1.0 : 0.0; }
  size_t lower_bound_before = 0, lower_bound_after = 0;
  size_t kept_bytes = 0;  // encoder features above R kept whole
  bool carried = false;    // halos carried (BandingSpec::carry)
  int stage_rows = 0;      // BandingSpec::stage_rows
  size_t carry_bytes = 0;  // most bytes of carried rows alive across a band boundary
  std::map<std::string, int64_t> carried_rows;  // tensor (stage) -> most rows it carries
};

// Rewrites g (a GPEN-shaped graph: encoder, dense style part, decoder) to run banded as
// described above. Tensor ids that existed keep their meaning for graph inputs and outputs.
// Throws gpen::Error naming the problem when the spec does not fit the graph.
BandingResult apply_banding(Graph& g, const BandingSpec& spec, bool allow_inplace = true);

// The output height of g (its single output, NHWC) and the resolutions R a banding may start at.
int64_t banding_output_rows(const Graph& g);
std::vector<int> banding_resolutions(const Graph& g);

// Search: the banding with the fewest extra FLOPs whose liveness lower bound fits `budget`
// bytes (over band resolutions, kept features and band counts up to max_bands). `forced_bands`
// > 0 fixes the band count. Returns applied == false (and g unchanged) when none fits; *best_lb
// then gets the smallest bound seen.
struct BandingSearch {
  size_t budget = 0;
  int forced_bands = 0;
  int max_bands = 64;
  double max_extra_flops = 0.5;  // candidates above this are not considered (unless forced_bands)
  bool try_recompute = true;      // candidates with recomputed halos
  bool try_carry = true;          // and with carried ones
};
BandingResult choose_banding(Graph& g, const BandingSearch& s, bool allow_inplace = true, size_t* best_lb = nullptr);

}  // namespace gpen
