#include "reports/convert_args.h"

#include "engine/core/error.h"
#include "engine/models/gpen.h"

namespace gpen::report {

conv::ConvertOptions convert_options(const ConvertArgs& a) {
  GPEN_CHECK(a.group_size >= 0, "convert: --group-size must be 0 or positive (got " + std::to_string(a.group_size) + ")");
  conv::ConvertOptions opt;
  opt.arch = conv::parse_arch(a.arch);
  opt.key = a.key;
  opt.dtype = parse_dtype(a.dtype);
  opt.task = a.task;
  opt.dense_dtype = parse_dtype(a.dense_dtype);
  opt.q8_group = a.group_size;
  opt.dense_layers = parse_dense8_layers(a.dense_layers);
  return opt;
}

}  // namespace gpen::report
