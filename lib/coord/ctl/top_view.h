// What gpushare-ctl top draws, as lines of text: pure, so that a unit test
// holds the layout and the program only moves the cursor.
//
//   gpushare-ctl top  12:01:07  every 1s  2 jobs on 1 GPU  q quits
//
//   GPU 5e2f1c3a  memory 3GiB of 16GiB, 512MiB spilled to host  free GPU time 38%
//     ID  NAME   CLASS  SPEED      SOLO/FREE  HOLD             MEMORY     SPILLED  STATE
//     1   train  prod   41.2 it/s  98% solo   -                2.5GiB/-   0B       running
//     2   sweep  opp    9.87 it/s  62% free   waiting-for-gap  512MiB/-   512MiB   running
//
//   node: 2 jobs (1 production, 1 opportunistic), 0 paused; 3GiB used, 512MiB spilled
//
// A GPU is drawn once some job uses it (ls reads jobs only, and top asks
// the coordinator nothing more); a job sits under its first GPU. Lines
// fit `width`; below `height` lines the last one says how many are left
// out.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace gpushare::ctl {

struct TopFrame {
  std::string clock;     ///< "12:01:07", the local time of the sample
  std::string interval;  ///< as given: "1s"
  std::size_t width = 80;
  std::size_t height = 24;
};

/// The screen's lines (at most frame.height, each at most frame.width
/// columns) for the job records of one ls.
std::vector<std::string> top_lines(const std::vector<nlohmann::ordered_json>& records,
                                   const TopFrame& frame);

}  // namespace gpushare::ctl
