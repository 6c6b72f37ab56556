#include "transfers.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "paraplan/sdk.hpp"

namespace mpi_executor {
namespace {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw paraplan::Error(PP_ERROR_INTERNAL, std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

// Tags of the axis rings: the sequence number, kept below the 32767 every MPI allows.
int ring_tag(uint64_t sequence) { return static_cast<int>(sequence % 32768); }

}  // namespace

// Small integers, distinct per sender, sequence and element, whose sums over any group of up to
// 1024 ranks stay below 2^24 (exact in fp32).
float verify_value(int world_rank, uint64_t sequence, size_t element) {
  return static_cast<float>(world_rank % 251 + 1 + 256 * static_cast<int>((sequence * 7 + element) % 61));
}

Transfers::Transfers(const rank_program::RankMesh& mesh, int world_rank, bool verify)
    : mesh_(mesh), world_rank_(world_rank), verify_(verify) {
  const int32_t axes = static_cast<int32_t>(mesh.axis_count());
  std::vector<int32_t> members;
  for (int32_t axis = 0; axis < axes; ++axis) {
    MPI_Comm comm = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, mesh.group(world_rank, axis),
                             static_cast<int>(mesh.coordinate(world_rank, axis)), &comm),
              "MPI_Comm_split");
    axes_.push_back(comm);
    mesh.members(world_rank, axis, members);
    std::vector<int> by_coordinate(members.size());
    for (int32_t member : members) by_coordinate[static_cast<size_t>(mesh.coordinate(member, axis))] = member;
    members_.push_back(by_coordinate);
    position_.push_back(static_cast<int>(mesh.coordinate(world_rank, axis)));
    sequence_.push_back(0);
  }
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &pipeline_), "MPI_Comm_dup");
}

Transfers::~Transfers() {
  for (MPI_Comm& comm : axes_) MPI_Comm_free(&comm);
  if (pipeline_ != MPI_COMM_NULL) MPI_Comm_free(&pipeline_);
}

size_t Transfers::elements_of(double bytes) {
  return std::max<size_t>(1, static_cast<size_t>(std::llround(bytes / sizeof(float))));
}

std::vector<float>& Transfers::buffer(Transfer& transfer, size_t elements) {
  auto found = pool_.find(elements);
  if (found != pool_.end() && !found->second.empty()) {
    transfer.buffers.push_back(std::move(found->second.back()));
    found->second.pop_back();
  } else {
    transfer.buffers.emplace_back(elements, 0.5f);
  }
  return transfer.buffers.back();
}

void Transfers::start_collective(const pp_op& op, double bytes, bool blocking, Transfer& transfer) {
  const size_t axis = static_cast<size_t>(op.axis);
  const std::vector<int>& members = members_[axis];
  const size_t p = members.size();
  if (p <= 1) return;
  const MPI_Comm comm = axes_[axis];
  const int me = position_[axis];
  const uint64_t sequence = sequence_[axis]++;
  const size_t total = elements_of(bytes);
  const size_t chunk = (total + p - 1) / p;  // the per-member block of the gathered / scattered kinds
  const auto fill = [&](std::vector<float>& data, size_t offset) {
    if (verify_)
      for (size_t e = 0; e < data.size(); ++e) data[e] = verify_value(world_rank_, sequence, offset + e);
  };
  const auto expect = [&](size_t received, auto&& value) {
    if (!verify_) return;
    Transfer::Check check{received, std::vector<float>(transfer.buffers[received].size())};
    for (size_t e = 0; e < check.expected.size(); ++e) check.expected[e] = value(e);
    transfer.checks.push_back(std::move(check));
  };
  const auto sum_over_members = [&](size_t element) {
    float sum = 0;
    for (int member : members) sum += verify_value(member, sequence, element);
    return sum;
  };
  // Buffers by index: the list may grow, the data each holds does not move.
  const auto take = [&](size_t elements) {
    buffer(transfer, elements);
    return transfer.buffers.size() - 1;
  };
  const auto data = [&](size_t index) { return transfer.buffers[index].data(); };
  const auto next_request = [&]() {
    transfer.requests.emplace_back();
    return &transfer.requests.back();
  };
  const int n_total = static_cast<int>(total), n_chunk = static_cast<int>(chunk);

  if (op.kind == PP_OP_SEND_RECV) {  // a ring over the axis: pass to the next member, take from the previous
    const int next = static_cast<int>((static_cast<size_t>(me) + 1) % p);
    const int previous = static_cast<int>((static_cast<size_t>(me) + p - 1) % p);
    const size_t out = take(total), in = take(total);
    fill(transfer.buffers[out], 0);
    check_mpi(MPI_Isend(data(out), n_total, MPI_FLOAT, next, ring_tag(sequence), comm, next_request()), "MPI_Isend");
    check_mpi(MPI_Irecv(data(in), n_total, MPI_FLOAT, previous, ring_tag(sequence), comm, next_request()), "MPI_Irecv");
    const int from = members[static_cast<size_t>(previous)];
    expect(in, [&](size_t e) { return verify_value(from, sequence, e); });
    return;
  }
  switch (op.collective) {
    case PP_COLLECTIVE_ALL_REDUCE: {
      const size_t in = take(total), out = take(total);
      fill(transfer.buffers[in], 0);
      check_mpi(blocking ? MPI_Allreduce(data(in), data(out), n_total, MPI_FLOAT, MPI_SUM, comm)
                         : MPI_Iallreduce(data(in), data(out), n_total, MPI_FLOAT, MPI_SUM, comm, next_request()),
                "MPI_Allreduce");
      expect(out, sum_over_members);
      return;
    }
    case PP_COLLECTIVE_ALL_GATHER: {
      const size_t in = take(chunk), out = take(chunk * p);
      fill(transfer.buffers[in], 0);
      check_mpi(blocking ? MPI_Allgather(data(in), n_chunk, MPI_FLOAT, data(out), n_chunk, MPI_FLOAT, comm)
                         : MPI_Iallgather(data(in), n_chunk, MPI_FLOAT, data(out), n_chunk, MPI_FLOAT, comm, next_request()),
                "MPI_Allgather");
      expect(out, [&](size_t e) { return verify_value(members[e / chunk], sequence, e % chunk); });
      return;
    }
    case PP_COLLECTIVE_REDUCE_SCATTER: {
      const size_t in = take(chunk * p), out = take(chunk);
      fill(transfer.buffers[in], 0);
      check_mpi(blocking ? MPI_Reduce_scatter_block(data(in), data(out), n_chunk, MPI_FLOAT, MPI_SUM, comm)
                         : MPI_Ireduce_scatter_block(data(in), data(out), n_chunk, MPI_FLOAT, MPI_SUM, comm, next_request()),
                "MPI_Reduce_scatter_block");
      expect(out, [&](size_t e) { return sum_over_members(static_cast<size_t>(me) * chunk + e); });
      return;
    }
    case PP_COLLECTIVE_ALL_TO_ALL: {
      if (op.count > 1.0) {
        // Uneven routing: every member sends `mean`; the busiest, `hot`, receives load / P of
        // each sender's toward the experts (dispatch forward, combine backward) and sends as
        // much to each on the way back.
        const double load = std::min(op.count, static_cast<double>(p));
        const size_t mean = std::max<size_t>(p, static_cast<size_t>(std::llround(static_cast<double>(total) / load)));
        const size_t hot_block = static_cast<size_t>(std::llround(load * static_cast<double>(mean) / static_cast<double>(p)));
        const size_t cold_block = (mean - std::min(mean, hot_block)) / (p - 1);
        const size_t hot = static_cast<size_t>(sequence % p);
        const bool to_experts = (std::string_view(op.name) == PP_OP_EP_DISPATCH) == (op.phase != PP_PHASE_BACKWARD);
        ++uneven_;
        // block(from, to): the floats member `from` sends member `to`.
        const auto block = [&](size_t from, size_t to) {
          return static_cast<int>((to_experts ? to : from) == hot ? hot_block : cold_block);
        };
        std::vector<int> send_counts(p), send_displs(p), receive_counts(p), receive_displs(p);
        int sent = 0, received = 0;
        for (size_t q = 0; q < p; ++q) {
          send_counts[q] = block(static_cast<size_t>(me), q), send_displs[q] = sent, sent += send_counts[q];
          receive_counts[q] = block(q, static_cast<size_t>(me)), receive_displs[q] = received, received += receive_counts[q];
        }
        const size_t in = take(static_cast<size_t>(std::max(sent, 1))), out = take(static_cast<size_t>(std::max(received, 1)));
        fill(transfer.buffers[in], 0);
        transfer.counts = {send_counts, send_displs, receive_counts, receive_displs};
        const std::vector<std::vector<int>>& c = transfer.counts;
        check_mpi(blocking ? MPI_Alltoallv(data(in), c[0].data(), c[1].data(), MPI_FLOAT, data(out), c[2].data(),
                                           c[3].data(), MPI_FLOAT, comm)
                           : MPI_Ialltoallv(data(in), c[0].data(), c[1].data(), MPI_FLOAT, data(out), c[2].data(),
                                            c[3].data(), MPI_FLOAT, comm, next_request()),
                  "MPI_Alltoallv");
        // Element e of the block from member j: j's buffer at its displacement for this rank.
        if (verify_ && received > 0) {
          Transfer::Check check{out, std::vector<float>(static_cast<size_t>(received))};
          for (size_t j = 0; j < p; ++j) {
            size_t offset = 0;  // where j's block for this rank starts in j's send buffer
            for (size_t q = 0; q < static_cast<size_t>(me); ++q) offset += static_cast<size_t>(block(j, q));
            for (int e = 0; e < receive_counts[j]; ++e)
              check.expected[static_cast<size_t>(receive_displs[j] + e)] = verify_value(members[j], sequence, offset + static_cast<size_t>(e));
          }
          transfer.checks.push_back(std::move(check));
        }
        return;
      }
      const size_t in = take(chunk * p), out = take(chunk * p);
      fill(transfer.buffers[in], 0);
      check_mpi(blocking ? MPI_Alltoall(data(in), n_chunk, MPI_FLOAT, data(out), n_chunk, MPI_FLOAT, comm)
                         : MPI_Ialltoall(data(in), n_chunk, MPI_FLOAT, data(out), n_chunk, MPI_FLOAT, comm, next_request()),
                "MPI_Alltoall");
      // Block j came from member j: the part of its buffer addressed to this rank.
      expect(out, [&](size_t e) {
        return verify_value(members[e / chunk], sequence, static_cast<size_t>(me) * chunk + e % chunk);
      });
      return;
    }
    case PP_COLLECTIVE_BROADCAST: {
      const size_t both = take(total);
      if (me == 0) fill(transfer.buffers[both], 0);
      check_mpi(blocking ? MPI_Bcast(data(both), n_total, MPI_FLOAT, 0, comm)
                         : MPI_Ibcast(data(both), n_total, MPI_FLOAT, 0, comm, next_request()),
                "MPI_Bcast");
      expect(both, [&](size_t e) { return verify_value(members[0], sequence, e); });
      return;
    }
    default:
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, std::string("op '") + op.name + "' has a collective kind MPI has no call for");
  }
}

void Transfers::start_send(int peer, int tag, double bytes, Transfer& transfer) {
  const size_t total = elements_of(bytes);
  std::vector<float>& out = buffer(transfer, total);
  if (verify_)
    for (size_t e = 0; e < total; ++e) out[e] = verify_value(world_rank_, static_cast<uint64_t>(tag), e);
  transfer.requests.emplace_back();
  check_mpi(MPI_Isend(out.data(), static_cast<int>(total), MPI_FLOAT, peer, tag, pipeline_, &transfer.requests.back()),
            "MPI_Isend");
}

void Transfers::receive(int peer, int tag, double bytes, const std::string& what) {
  Transfer transfer;
  transfer.what = &what;
  transfer.sender = peer;
  const size_t total = elements_of(bytes);
  std::vector<float>& in = buffer(transfer, total);
  check_mpi(MPI_Recv(in.data(), static_cast<int>(total), MPI_FLOAT, peer, tag, pipeline_, MPI_STATUS_IGNORE), "MPI_Recv");
  if (verify_) {
    Transfer::Check check{0, std::vector<float>(total)};
    for (size_t e = 0; e < total; ++e) check.expected[e] = verify_value(peer, static_cast<uint64_t>(tag), e);
    transfer.checks.push_back(std::move(check));
  }
  finish(transfer);
}

void Transfers::wait(Transfer& transfer) {
  if (!transfer.requests.empty())
    check_mpi(MPI_Waitall(static_cast<int>(transfer.requests.size()), transfer.requests.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
  finish(transfer);
}

bool Transfers::test(Transfer& transfer) {
  int done = 1;
  if (!transfer.requests.empty())
    check_mpi(MPI_Testall(static_cast<int>(transfer.requests.size()), transfer.requests.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
  if (done) finish(transfer);
  return done != 0;
}

void Transfers::finish(Transfer& transfer) {
  for (const Transfer::Check& check : transfer.checks) {
    const std::vector<float>& got = transfer.buffers[check.received];
    for (size_t e = 0; e < check.expected.size(); ++e) {
      if (got[e] == check.expected[e]) continue;
      std::ostringstream message;
      message << "verification failed on rank " << world_rank_ << ": " << (transfer.what ? *transfer.what : "?");
      if (transfer.sender >= 0) message << ": receive from rank " << transfer.sender;
      message << ": element " << e << " is "
              << got[e] << ", expected " << check.expected[e]
              << " (a wrong group, peer, order or size of the collective)";
      throw paraplan::Error(PP_ERROR_INTERNAL, message.str());
    }
    checked_ += check.expected.size();
    ++checked_transfers_;
  }
  transfer.checks.clear();
  transfer.requests.clear();
  transfer.counts.clear();
  for (std::vector<float>& data : transfer.buffers) {
    const size_t size = data.size();
    pool_[size].push_back(std::move(data));
  }
  transfer.buffers.clear();
}

}  // namespace mpi_executor
