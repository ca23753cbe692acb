#include "results/result.hpp"

namespace dtsim::results {

const char* to_string(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::infeasible:
      return "infeasible";
  }
  return "unknown";
}

}  // namespace dtsim::results
