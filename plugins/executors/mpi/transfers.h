// transfers.h: the plan's communication on MPI, with optional verification.
//
// One communicator per mesh axis (MPI_Comm_split: colour = the rank's group on the axis, key =
// its coordinate, so communicator rank = coordinate), and a duplicate of the world for the
// pipeline's point-to-point messages. A plan op of `bytes` moves bytes / 4 floats:
//   all-reduce      MPI_Iallreduce (sum) of the whole buffer
//   all-gather      MPI_Iallgather: each member contributes 1/P of the gathered buffer
//   reduce-scatter  MPI_Ireduce_scatter_block: the whole buffer in, 1/P out
//   all-to-all      MPI_Ialltoall: 1/P of the buffer to every member; uneven (pp_op.count =
//                   load > 1, ep's dropless imbalance): MPI_Ialltoallv, every member sends the
//                   mean, bytes / load, and one member, a different one each exchange, gets
//                   load / P of every sender's (the busiest: its receive buffer is `bytes`)
//                   toward the experts, and sends it back on the way from them
//   broadcast       MPI_Ibcast from the group's first member
//   send-recv on an axis (context-parallel ring): MPI_Isend to the next member, MPI_Irecv from
//                   the previous one
//   pipeline boundary: MPI_Isend to the peer stage's rank, MPI_Recv there (tag = message slot
//                   and op, as rank_program numbers them)
// Overlappable communication is non-blocking; the caller waits where the program says something
// depends on it and polls (progress) between kernels so it advances while compute runs. Critical
// collectives use the blocking calls: nothing runs beside them anyway.
//
// Verification (--verify): every buffer is filled with values that depend on the sender's world
// rank, the collective's sequence number on its communicator and the element, all small
// integers that fp32 sums exactly; every result is compared element by element with what the
// group's members must have contributed. A wrong group, a wrong order of collectives on a
// communicator, a wrong peer or tag, or a wrong size shows up as a mismatch naming the op.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "paraplan/plan.h"
#include "rank_mesh.h"

namespace mpi_executor {

// What the element `element` of `world_rank`'s buffer holds for sequence number `sequence`.
float verify_value(int world_rank, uint64_t sequence, size_t element);

// One instruction's communication in flight.
struct Transfer {
  std::vector<MPI_Request> requests;
  std::vector<std::vector<float>> buffers;
  struct Check {
    size_t received = 0;  // index into buffers
    std::vector<float> expected;
  };
  std::vector<Check> checks;
  std::vector<std::vector<int>> counts;  // MPI_Ialltoallv's counts and displacements, alive until done
  // For a verification failure: the instruction's label (owned by the program; the text is
  // built only if a check fails, not for every transfer of every step) and, for a received
  // message, its sender.
  const std::string* what = nullptr;
  int sender = -1;
};

class Transfers {
 public:
  Transfers(const rank_program::RankMesh& mesh, int world_rank, bool verify);
  ~Transfers();
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  // Starts one instance of a collective (or axis send-recv) op over its axis; `blocking`: a
  // critical collective runs to completion through the blocking call (Open MPI's tuned
  // algorithms, faster than the non-blocking library's for large buffers).
  void start_collective(const pp_op& op, double bytes, bool blocking, Transfer& transfer);
  // Starts a boundary send of `bytes` to `peer` (a world rank) with `tag`.
  void start_send(int peer, int tag, double bytes, Transfer& transfer);
  // Receives a boundary message (blocking) and checks it.
  void receive(int peer, int tag, double bytes, const std::string& what);  // `what` outlives the call

  // Completes `transfer` (blocking), checks it and returns its buffers to the pool.
  void wait(Transfer& transfer);
  // True when `transfer` has completed (then checked and released as by wait).
  bool test(Transfer& transfer);

  // Numbers this rank's collectives one ahead of its groups' (a fault on purpose, for tests).
  void skew_sequences() {
    for (uint64_t& sequence : sequence_) ++sequence;
  }

  uint64_t checked_values() const { return checked_; }
  uint64_t checked_transfers() const { return checked_transfers_; }
  uint64_t uneven_all_to_alls() const { return uneven_; }  // MPI_Alltoallv exchanges started

 private:
  std::vector<float>& buffer(Transfer& transfer, size_t elements);
  void finish(Transfer& transfer);
  static size_t elements_of(double bytes);

  const rank_program::RankMesh& mesh_;
  int world_rank_;
  bool verify_;
  std::vector<MPI_Comm> axes_;                 // per mesh axis
  std::vector<std::vector<int>> members_;      // per axis: world ranks by communicator rank
  std::vector<int> position_;                  // per axis: this rank's communicator rank
  std::vector<uint64_t> sequence_;             // per axis: collectives issued so far
  MPI_Comm pipeline_ = MPI_COMM_NULL;
  std::map<size_t, std::vector<std::vector<float>>> pool_;  // free buffers by size
  uint64_t checked_ = 0, checked_transfers_ = 0, uneven_ = 0;
};

}  // namespace mpi_executor
