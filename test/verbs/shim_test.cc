/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The verbs shim through the real verbs.h API, against the fake daemon
// (fake_daemon.h) forked per test. This binary links the shim, not rdma-core.

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_daemon.h"

namespace {

constexpr size_t kBuf = 64 * 1024;

class ShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/tmp/mr-shim-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++) +
            ".sock";
    daemon_ = fork();
    ASSERT_GE(daemon_, 0);
    if (daemon_ == 0) {
      // Dies with the test: a test that aborts never leaves it holding the runner's pipes.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      _exit(metaroce::test::RunFakeDaemon(path_.c_str()));
    }
    for (int i = 0; i < 200 && access(path_.c_str(), F_OK) != 0; i++) usleep(10000);
    setenv("METAROCE_SOCKET", path_.c_str(), 1);
  }

  void TearDown() override {
    KillDaemon();
    unlink(path_.c_str());
  }

  void KillDaemon() {
    if (daemon_ > 0) {
      kill(daemon_, SIGKILL);
      waitpid(daemon_, nullptr, 0);
      daemon_ = -1;
    }
  }

  ibv_context* Open() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    EXPECT_EQ(n, 1);
    if (n != 1) return nullptr;
    ibv_context* ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    return ctx;
  }

  std::string path_;
  pid_t daemon_ = -1;
  static inline int counter_ = 0;
};

// Two connected RC QPs of one context (the fake daemon loops them back); b
// may receive through an SRQ.
struct Pair {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* ch = nullptr;
  ibv_cq* cq = nullptr;
  ibv_srq* srq = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  std::vector<char> src = std::vector<char>(kBuf), dst = std::vector<char>(kBuf);
  ibv_mr* src_mr = nullptr;
  ibv_mr* dst_mr = nullptr;

  ibv_qp* NewQp(uint32_t send_wr, bool ex = false, ibv_srq* on = nullptr) {
    ibv_qp_init_attr_ex init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.srq = on;
    init.cap.max_send_wr = send_wr;
    init.cap.max_recv_wr = 16;
    init.cap.max_send_sge = 2;
    init.cap.max_recv_sge = 2;
    init.cap.max_inline_data = 32;
    init.qp_type = IBV_QPT_RC;
    init.comp_mask = IBV_QP_INIT_ATTR_PD;
    init.pd = pd;
    if (ex) {
      init.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
      init.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
    }
    ibv_qp* qp = ibv_create_qp_ex(ctx, &init);
    if (qp != nullptr) {
      EXPECT_GE(init.cap.max_inline_data, 32u);  // granted caps written back
    }
    return qp;
  }

  static int ToInit(ibv_qp* qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  }

  int ToRtr(ibv_qp* qp, uint32_t dest) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = dest;
    a.rq_psn = 1;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid);
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  }

  static int ToRts(ibv_qp* qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 1;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  }

  // With @p srq_wr, b receives through an SRQ of that max_wr (2 SGEs).
  bool Setup(ibv_context* c, uint32_t send_wr = 64, bool ex = false, uint32_t srq_wr = 0) {
    ctx = c;
    pd = ibv_alloc_pd(ctx);
    ch = ibv_create_comp_channel(ctx);
    cq = ibv_create_cq(ctx, 256, this, ch, 0);
    if (pd == nullptr || ch == nullptr || cq == nullptr) return false;
    if (srq_wr != 0) {
      ibv_srq_init_attr si{};
      si.attr.max_wr = srq_wr;
      si.attr.max_sge = 2;
      srq = ibv_create_srq(pd, &si);
      if (srq == nullptr) return false;
    }
    for (size_t i = 0; i < kBuf; i++) src[i] = static_cast<char>(i * 7 + 3);
    src_mr = ibv_reg_mr(pd, src.data(), kBuf, IBV_ACCESS_LOCAL_WRITE);
    dst_mr = ibv_reg_mr(pd, dst.data(), kBuf,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    a = NewQp(send_wr, ex);
    b = NewQp(send_wr, ex, srq);
    if (src_mr == nullptr || dst_mr == nullptr || a == nullptr || b == nullptr) return false;
    return ToInit(a) == 0 && ToInit(b) == 0 && ToRtr(a, b->qp_num) == 0 &&
           ToRtr(b, a->qp_num) == 0 && ToRts(a) == 0 && ToRts(b) == 0;
  }

  void Teardown() {
    if (a != nullptr) {
      EXPECT_EQ(ibv_destroy_qp(a), 0);
    }
    if (b != nullptr) {
      EXPECT_EQ(ibv_destroy_qp(b), 0);
    }
    if (srq != nullptr) {
      EXPECT_EQ(ibv_destroy_srq(srq), 0);
    }
    if (src_mr != nullptr) {
      EXPECT_EQ(ibv_dereg_mr(src_mr), 0);
    }
    if (dst_mr != nullptr) {
      EXPECT_EQ(ibv_dereg_mr(dst_mr), 0);
    }
    if (cq != nullptr) {
      EXPECT_EQ(ibv_destroy_cq(cq), 0);
    }
    if (ch != nullptr) {
      EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
    }
    if (pd != nullptr) {
      EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    }
    EXPECT_EQ(ibv_close_device(ctx), 0);
  }

  ibv_send_wr Write(uint64_t id, uint32_t len, ibv_sge* sge, bool signaled = true) {
    *sge = {reinterpret_cast<uintptr_t>(src.data()), len, src_mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(dst.data());
    wr.wr.rdma.rkey = dst_mr->rkey;
    return wr;
  }

  // A SEND of src[off, off + len) on a.
  ibv_send_wr Send(uint64_t id, uint32_t off, uint32_t len, ibv_sge* sge) {
    *sge = {reinterpret_cast<uintptr_t>(src.data()) + off, len, src_mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    return wr;
  }

  // A receive into dst[off, off + len).
  ibv_recv_wr Recv(uint64_t id, uint32_t off, uint32_t len, ibv_sge* sge) {
    *sge = {reinterpret_cast<uintptr_t>(dst.data()) + off, len, dst_mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = sge;
    wr.num_sge = 1;
    return wr;
  }

  // A PD and the two regions on @p c, completing into @p cqx; no QP yet.
  bool SetupOnCq(ibv_context* c, ibv_cq_ex* cqx) {
    ctx = c;
    pd = ibv_alloc_pd(ctx);
    cq = ibv_cq_ex_to_cq(cqx);
    src_mr = ibv_reg_mr(pd, src.data(), kBuf, IBV_ACCESS_LOCAL_WRITE);
    dst_mr = ibv_reg_mr(pd, dst.data(), kBuf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    return pd != nullptr && src_mr != nullptr && dst_mr != nullptr;
  }

  // Polls until a completion of @p opcode, skipping others (5 s at most).
  bool PollFor(ibv_wc_opcode opcode, ibv_wc* wc) {
    for (int i = 0; i < 500000; i++) {
      const int n = ibv_poll_cq(cq, 1, wc);
      if (n < 0) return false;
      if (n == 1 && wc->opcode == opcode) return true;
      if (n == 0) usleep(10);
    }
    return false;
  }

  // Polls until one completion (5 s at most).
  bool PollOne(ibv_wc* wc) {
    for (int i = 0; i < 500000; i++) {
      const int n = ibv_poll_cq(cq, 1, wc);
      if (n == 1) return true;
      if (n < 0) return false;
      usleep(10);
    }
    return false;
  }
};

TEST_F(ShimTest, DeviceAndQueries) {
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_EQ(n, 1);
  EXPECT_STREQ(ibv_get_device_name(list[0]), "metaroce0");
  EXPECT_EQ(ibv_get_device_guid(list[0]), htobe64(0x0002c9fffe123456ull));
  EXPECT_EQ(list[0]->node_type, IBV_NODE_CA);
  EXPECT_EQ(list[1], nullptr);
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  ASSERT_NE(ctx, nullptr);
  ASSERT_NE(verbs_get_ctx(ctx), nullptr);

  ibv_device_attr d;
  ASSERT_EQ(ibv_query_device(ctx, &d), 0);
  EXPECT_STREQ(d.fw_ver, "metaroce");
  EXPECT_EQ(d.vendor_id, 0u);
  EXPECT_EQ(d.vendor_part_id, 0u);
  EXPECT_EQ(d.max_qp, 256);
  EXPECT_EQ(d.max_cqe, 1 << 15);  // clamped to the ring's deepest
  EXPECT_EQ(d.max_qp_rd_atom, 16);
  EXPECT_EQ(d.phys_port_cnt, 1);
  EXPECT_EQ(d.atomic_cap, IBV_ATOMIC_HCA);
  EXPECT_EQ(d.max_srq, 32);  // the fake daemon's max_srq
  EXPECT_EQ(d.max_srq_wr, d.max_qp_wr);
  EXPECT_EQ(d.max_srq_wr, 4096);
  EXPECT_EQ(d.max_srq_sge, d.max_sge);
  EXPECT_EQ(d.max_srq_sge, 16);
  ibv_device_attr_ex dx;
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &dx), 0);
  EXPECT_EQ(dx.orig_attr.node_guid, d.node_guid);
  EXPECT_EQ(dx.phys_port_cnt_ex, 1u);

  ibv_port_attr p;
  ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
  EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(p.active_mtu, IBV_MTU_4096);
  EXPECT_EQ(p.lid, 1);
  EXPECT_EQ(p.gid_tbl_len, 1);
  EXPECT_NE(ibv_query_port(ctx, 2, &p), 0);

  ibv_gid g;
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &g), 0);
  EXPECT_EQ(g.raw[10], 0xff);
  EXPECT_EQ(g.raw[12], 127);
  EXPECT_EQ(ibv_query_gid(ctx, 1, 1, &g), -1);
  ibv_gid_entry e;
  ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
  EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(ibv_query_gid_table(ctx, &e, 1, 0), 1);
  __be16 pkey;
  ASSERT_EQ(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
  EXPECT_EQ(pkey, htobe16(0xffff));
  EXPECT_EQ(ibv_query_pkey(ctx, 1, 1, &pkey), -1);
  EXPECT_EQ(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST_F(ShimTest, NoDaemonMeansNoDevice) {
  setenv("METAROCE_SOCKET", "/tmp/mr-shim-test-nobody-listens.sock", 1);
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(list[0], nullptr);
  ibv_free_device_list(list);
}

TEST_F(ShimTest, WriteThroughSharedMemoryAndPoll) {
  Pair p;
  ASSERT_TRUE(p.Setup(Open()));
  // The malloc'd buffers now live on memfds the daemon maps.
  std::ifstream maps("/proc/self/maps");
  std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("/memfd:metaroce-mr"), std::string::npos);

  ibv_sge sge;
  ibv_send_wr wr = p.Write(42, kBuf, &sge);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(p.a, &wr, &bad), 0);
  ibv_wc wc;
  ASSERT_TRUE(p.PollOne(&wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc.qp_num, p.a->qp_num);
  EXPECT_EQ(memcmp(p.src.data(), p.dst.data(), kBuf), 0);

  // SEND into a posted receive, with immediate data.
  char rbuf[64] = {};
  ibv_mr* rmr = ibv_reg_mr(p.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(rmr, nullptr);
  ibv_sge rsge = {reinterpret_cast<uintptr_t>(rbuf), sizeof(rbuf), rmr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 7;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(p.b, &rwr, &rbad), 0);
  char msg[] = "hello over metaroce";
  ibv_sge ssge = {reinterpret_cast<uintptr_t>(msg), sizeof(msg), 0};
  ibv_send_wr swr{};
  swr.wr_id = 8;
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND_WITH_IMM;
  swr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  swr.imm_data = htobe32(0x1234);
  ASSERT_EQ(ibv_post_send(p.a, &swr, &bad), 0);
  ibv_wc w[2];
  int got = 0;
  for (int i = 0; i < 100000 && got < 2; i++) {
    const int n = ibv_poll_cq(p.cq, 2 - got, &w[got]);
    ASSERT_GE(n, 0);
    got += n;
    if (got < 2) usleep(10);
  }
  ASSERT_EQ(got, 2);
  const ibv_wc& recv = w[0].opcode == IBV_WC_RECV ? w[0] : w[1];
  EXPECT_EQ(recv.status, IBV_WC_SUCCESS);
  EXPECT_EQ(recv.wr_id, 7u);
  EXPECT_EQ(recv.byte_len, sizeof(msg));
  EXPECT_TRUE(recv.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(recv.imm_data, htobe32(0x1234));
  EXPECT_STREQ(rbuf, msg);
  EXPECT_EQ(ibv_dereg_mr(rmr), 0);

  ibv_qp_attr qa;
  ibv_qp_init_attr qi;
  ASSERT_EQ(ibv_query_qp(p.a, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(qa.dest_qp_num, p.b->qp_num);
  EXPECT_EQ(qa.timeout, 14);
  EXPECT_EQ(qa.min_rnr_timer, 12);
  EXPECT_GE(qi.cap.max_inline_data, 32u);
  p.Teardown();
}

TEST_F(ShimTest, CompletionEvents) {
  Pair p;
  ASSERT_TRUE(p.Setup(Open()));
  ASSERT_EQ(ibv_req_notify_cq(p.cq, 0), 0);
  ibv_sge sge;
  ibv_send_wr wr = p.Write(1, 128, &sge);
  ibv_send_wr* bad;
  ASSERT_EQ(ibv_post_send(p.a, &wr, &bad), 0);
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(p.ch, &ev_cq, &ev_ctx), 0);
  EXPECT_EQ(ev_cq, p.cq);
  EXPECT_EQ(ev_ctx, &p);
  ibv_ack_cq_events(ev_cq, 1);
  EXPECT_EQ(p.cq->comp_events_completed, 1u);
  ibv_wc wc;
  ASSERT_EQ(ibv_poll_cq(p.cq, 1, &wc), 1);
  // Non-blocking channel with nothing signalled: EAGAIN.
  fcntl(p.ch->fd, F_SETFL, fcntl(p.ch->fd, F_GETFL) | O_NONBLOCK);
  errno = 0;
  EXPECT_EQ(ibv_get_cq_event(p.ch, &ev_cq, &ev_ctx), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(ibv_destroy_comp_channel(p.ch), EBUSY);  // the CQ still uses it
  p.Teardown();
}

// METAROCE_POLL_SPIN_US: a thread whose polls find nothing sleeps in them
// instead of spinning, and still gets the completion that comes meanwhile.
TEST_F(ShimTest, PollsThatFindNothingSleepWhenAsked) {
  setenv("METAROCE_POLL_SPIN_US", "0", 1);  // read as the device opens
  Pair p;
  const bool up = p.Setup(Open());
  unsetenv("METAROCE_POLL_SPIN_US");
  ASSERT_TRUE(up);
  auto ns = [](clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
  };
  // 50 ms of empty polls: a spinning thread uses about as much CPU as wall
  // time, a sleeping one a few per cent (a syscall per sleep of <= 200 us).
  const long long wall0 = ns(CLOCK_MONOTONIC), cpu0 = ns(CLOCK_THREAD_CPUTIME_ID);
  ibv_wc wc;
  long polls = 0;
  while (ns(CLOCK_MONOTONIC) - wall0 < 50'000'000) {
    ASSERT_EQ(ibv_poll_cq(p.cq, 1, &wc), 0);
    polls++;
  }
  const long long wall = ns(CLOCK_MONOTONIC) - wall0, cpu = ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  EXPECT_LT(cpu, wall / 2) << polls << " polls in " << wall << " ns took " << cpu << " ns of CPU";
  // A completion that comes while the poller sleeps reaches it.
  int got = 0;
  std::thread poller([&] {
    for (long i = 0; i < 10'000'000 && got == 0; i++) {
      got = ibv_poll_cq(p.cq, 1, &wc);
      if (got < 0) return;
    }
  });
  usleep(2000);
  ibv_sge sge;
  ibv_send_wr wr = p.Write(5, 256, &sge);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(p.a, &wr, &bad), 0);
  poller.join();
  ASSERT_EQ(got, 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 5u);
  p.Teardown();
}

TEST_F(ShimTest, WrApi) {
  Pair p;
  ASSERT_TRUE(p.Setup(Open(), 64, true));
  ibv_qp_ex* qx = ibv_qp_to_qp_ex(p.a);
  ASSERT_NE(qx, nullptr);
  memset(p.dst.data(), 0, kBuf);
  ibv_wr_start(qx);
  qx->wr_id = 100;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qx, p.dst_mr->rkey, reinterpret_cast<uintptr_t>(p.dst.data()));
  ibv_wr_set_sge(qx, p.src_mr->lkey, reinterpret_cast<uintptr_t>(p.src.data()), 4096);
  qx->wr_id = 101;
  ibv_wr_rdma_write(qx, p.dst_mr->rkey, reinterpret_cast<uintptr_t>(p.dst.data()) + 4096);
  ibv_wr_set_inline_data(qx, p.src.data() + 4096, 16);
  ASSERT_EQ(ibv_wr_complete(qx), 0);
  ibv_wc wc;
  ASSERT_TRUE(p.PollOne(&wc));
  EXPECT_EQ(wc.wr_id, 100u);
  ASSERT_TRUE(p.PollOne(&wc));
  EXPECT_EQ(wc.wr_id, 101u);
  EXPECT_EQ(memcmp(p.src.data(), p.dst.data(), 4096 + 16), 0);

  // An unsupported builder fails the whole session; nothing is posted.
  ibv_wr_start(qx);
  qx->wr_id = 200;
  ibv_wr_rdma_write(qx, p.dst_mr->rkey, reinterpret_cast<uintptr_t>(p.dst.data()));
  ibv_wr_set_sge(qx, p.src_mr->lkey, reinterpret_cast<uintptr_t>(p.src.data()), 8);
  ibv_wr_local_inv(qx, 5);
  EXPECT_EQ(ibv_wr_complete(qx), EOPNOTSUPP);
  // An opcode outside send_ops_flags.
  ibv_wr_start(qx);
  ibv_wr_rdma_read(qx, p.dst_mr->rkey, reinterpret_cast<uintptr_t>(p.dst.data()));
  EXPECT_EQ(ibv_wr_complete(qx), EINVAL);
  usleep(20000);
  EXPECT_EQ(ibv_poll_cq(p.cq, 1, &wc), 0);
  p.Teardown();
}

TEST_F(ShimTest, ExtendedCq) {
  ibv_context* ctx = Open();
  ASSERT_NE(ctx, nullptr);
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 16;
  ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx, &ca), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_IMM;
  ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &ca);
  ASSERT_NE(cqx, nullptr);
  Pair p;
  ASSERT_TRUE(p.SetupOnCq(ctx, cqx));
  p.a = p.NewQp(8);
  ASSERT_NE(p.a, nullptr);
  ASSERT_EQ(Pair::ToInit(p.a), 0);
  ASSERT_EQ(p.ToRtr(p.a, p.a->qp_num), 0);
  ASSERT_EQ(Pair::ToRts(p.a), 0);
  ibv_sge sge[3];
  ibv_send_wr wr[3];
  for (int i = 0; i < 3; i++) wr[i] = p.Write(10 + i, 100 + i, &sge[i]);
  wr[0].next = &wr[1];
  wr[1].next = &wr[2];
  ibv_send_wr* bad;
  ASSERT_EQ(ibv_post_send(p.a, wr, &bad), 0);
  ibv_poll_cq_attr pa{};
  int seen = 0;
  for (int i = 0; i < 100000 && seen < 3; i++) {
    int r = ibv_start_poll(cqx, &pa);
    if (r == ENOENT) {
      usleep(10);
      continue;
    }
    ASSERT_EQ(r, 0);
    do {
      EXPECT_EQ(cqx->status, IBV_WC_SUCCESS);
      EXPECT_EQ(cqx->wr_id, static_cast<uint64_t>(10 + seen));
      EXPECT_EQ(ibv_wc_read_byte_len(cqx), static_cast<uint32_t>(100 + seen));
      EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RDMA_WRITE);
      EXPECT_EQ(ibv_wc_read_qp_num(cqx), p.a->qp_num);
      seen++;
    } while (ibv_next_poll(cqx) == 0);
    ibv_end_poll(cqx);
  }
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(ibv_destroy_cq(p.cq), EBUSY);  // the QP uses it
  EXPECT_EQ(ibv_destroy_qp(p.a), 0);
  p.a = nullptr;
  p.Teardown();
}

// The fake daemon puts QP handle h on lane h % 3, as a daemon of three
// shards: one CQ then holds completions in three lanes, and both polling
// APIs must take them all, each QP's in order.
TEST_F(ShimTest, OneCqTakesTheCompletionsOfQpsOnEveryLane) {
  ibv_context* ctx = Open();
  ASSERT_NE(ctx, nullptr);
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 64;
  ca.wc_flags = IBV_WC_EX_WITH_QP_NUM;
  ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &ca);
  ASSERT_NE(cqx, nullptr);
  Pair p;
  ASSERT_TRUE(p.SetupOnCq(ctx, cqx));
  constexpr int kQps = 3, kEach = 5;
  ibv_qp* qps[kQps];
  for (ibv_qp*& q : qps) {
    q = p.NewQp(16);
    ASSERT_NE(q, nullptr);
    ASSERT_EQ(Pair::ToInit(q), 0);
    ASSERT_EQ(p.ToRtr(q, q->qp_num), 0);
    ASSERT_EQ(Pair::ToRts(q), 0);
  }
  ASSERT_NE(qps[0]->handle % 3, qps[1]->handle % 3);
  ASSERT_NE(qps[1]->handle % 3, qps[2]->handle % 3);
  ASSERT_NE(qps[0]->handle % 3, qps[2]->handle % 3);
  auto post_all = [&] {
    for (int q = 0; q < kQps; q++) {
      ibv_sge sge[kEach];
      ibv_send_wr wr[kEach];
      for (int i = 0; i < kEach; i++) {
        wr[i] = p.Write(q * 100 + i, 64, &sge[i]);
        wr[i].next = i + 1 < kEach ? &wr[i + 1] : nullptr;
      }
      ibv_send_wr* bad;
      ASSERT_EQ(ibv_post_send(qps[q], wr, &bad), 0);
    }
  };
  auto qp_index = [&](uint32_t qpn) {
    for (int q = 0; q < kQps; q++) {
      if (qps[q]->qp_num == qpn) return q;
    }
    return -1;
  };
  // ibv_poll_cq, asking for more than one lane holds.
  post_all();
  int next[kQps] = {};
  int seen = 0;
  for (int i = 0; i < 100000 && seen < kQps * kEach; i++) {
    ibv_wc wc[kQps * kEach];
    const int n = ibv_poll_cq(p.cq, kQps * kEach, wc);
    ASSERT_GE(n, 0);
    for (int k = 0; k < n; k++) {
      const int q = qp_index(wc[k].qp_num);
      ASSERT_GE(q, 0);
      EXPECT_EQ(wc[k].wr_id, static_cast<uint64_t>(q * 100 + next[q]));
      next[q]++;
    }
    seen += n;
    if (n == 0) usleep(10);
  }
  EXPECT_EQ(seen, kQps * kEach);
  // The extended API.
  post_all();
  std::fill(std::begin(next), std::end(next), 0);
  seen = 0;
  ibv_poll_cq_attr pa{};
  for (int i = 0; i < 100000 && seen < kQps * kEach; i++) {
    const int r = ibv_start_poll(cqx, &pa);
    if (r == ENOENT) {
      usleep(10);
      continue;
    }
    ASSERT_EQ(r, 0);
    do {
      const int q = qp_index(ibv_wc_read_qp_num(cqx));
      ASSERT_GE(q, 0);
      EXPECT_EQ(cqx->wr_id, static_cast<uint64_t>(q * 100 + next[q]));
      next[q]++;
      seen++;
    } while (ibv_next_poll(cqx) == 0);
    ibv_end_poll(cqx);
  }
  EXPECT_EQ(seen, kQps * kEach);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(p.cq, 1, &wc), 0);
  for (ibv_qp* q : qps) EXPECT_EQ(ibv_destroy_qp(q), 0);
  p.Teardown();
}

TEST_F(ShimTest, ErrorCases) {
  Pair p;
  ibv_context* ctx = Open();
  ASSERT_NE(ctx, nullptr);
  p.ctx = ctx;
  p.pd = ibv_alloc_pd(ctx);
  p.cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ASSERT_NE(p.cq, nullptr);
  // MR access rules; optional bits are accepted.
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(p.pd, p.dst.data(), kBuf, IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  p.src_mr =
      ibv_reg_mr(p.pd, p.src.data(), kBuf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  ASSERT_NE(p.src_mr, nullptr);
  p.dst_mr = ibv_reg_mr_iova2(p.pd, p.dst.data(), kBuf, reinterpret_cast<uintptr_t>(p.dst.data()),
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(p.dst_mr, nullptr);
  // Non-RC QPs are not there.
  ibv_qp_init_attr ud{};
  ud.send_cq = ud.recv_cq = p.cq;
  ud.cap.max_send_wr = ud.cap.max_recv_wr = 1;
  ud.qp_type = IBV_QPT_UD;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(p.pd, &ud), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ud.qp_type = IBV_QPT_RC;
  ud.cap.max_send_sge = 17;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(p.pd, &ud), nullptr);
  EXPECT_EQ(errno, EINVAL);

  p.a = p.NewQp(4);
  ASSERT_NE(p.a, nullptr);
  ibv_sge sge;
  ibv_send_wr wr = p.Write(1, 64, &sge);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(p.a, &wr, &bad), EINVAL);  // RESET: not RTS
  EXPECT_EQ(bad, &wr);
  // Transitions: RESET->RTR does not exist; INIT->RTR needs its attributes.
  ibv_qp_attr qa{};
  qa.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(p.a, &qa, IBV_QP_STATE), EINVAL);
  qa.qp_state = IBV_QPS_INIT;
  EXPECT_EQ(ibv_modify_qp(p.a, &qa, IBV_QP_STATE | IBV_QP_PORT), EINVAL);  // no PKEY/ACCESS
  ASSERT_EQ(Pair::ToInit(p.a), 0);
  qa.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(p.a, &qa, IBV_QP_STATE | IBV_QP_AV), EINVAL);
  ASSERT_EQ(p.ToRtr(p.a, p.a->qp_num), 0);
  EXPECT_EQ(ibv_post_send(p.a, &wr, &bad), EINVAL);  // RTR: not RTS
  ASSERT_EQ(Pair::ToRts(p.a), 0);

  // A bad opcode in the middle: the ones before it are posted.
  ibv_sge s2[3];
  ibv_send_wr w[3];
  for (int i = 0; i < 3; i++) w[i] = p.Write(i, 8, &s2[i]);
  w[0].next = &w[1];
  w[1].next = &w[2];
  w[1].opcode = static_cast<ibv_wr_opcode>(IBV_WR_BIND_MW);
  EXPECT_EQ(ibv_post_send(p.a, w, &bad), EINVAL);
  EXPECT_EQ(bad, &w[1]);
  ibv_wc wc;
  ASSERT_TRUE(p.PollOne(&wc));
  EXPECT_EQ(wc.wr_id, 0u);
  // Too much inline data.
  ibv_send_wr big = p.Write(9, 1024, &sge);
  big.send_flags |= IBV_SEND_INLINE;
  EXPECT_EQ(ibv_post_send(p.a, &big, &bad), EINVAL);

  // A full send queue: one batch of max_send_wr + 1.
  ibv_qp_attr cap_attr;
  ibv_qp_init_attr cap_init;
  ASSERT_EQ(ibv_query_qp(p.a, &cap_attr, IBV_QP_CAP, &cap_init), 0);
  const uint32_t depth = cap_attr.cap.max_send_wr;
  std::vector<ibv_send_wr> many(depth + 1);
  std::vector<ibv_sge> sges(depth + 1);
  for (uint32_t i = 0; i <= depth; i++) {
    many[i] = p.Write(1000 + i, 8, &sges[i], false);
    if (i > 0) many[i - 1].next = &many[i];
  }
  EXPECT_EQ(ibv_post_send(p.a, many.data(), &bad), ENOMEM);
  EXPECT_EQ(bad, &many[depth]);

  // Back to RESET once connected is refused; ERR is fine and queryable.
  qa.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(p.a, &qa, IBV_QP_STATE), EOPNOTSUPP);
  qa.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(p.a, &qa, IBV_QP_STATE), 0);
  ASSERT_EQ(ibv_query_qp(p.a, &cap_attr, IBV_QP_STATE, &cap_init), 0);
  EXPECT_EQ(cap_attr.qp_state, IBV_QPS_ERR);
  // The fake daemon reports an async event for the failed QP.
  ibv_async_event ev;
  ASSERT_EQ(ibv_get_async_event(ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
  EXPECT_EQ(ev.element.qp, p.a);
  ibv_ack_async_event(&ev);
  EXPECT_EQ(p.a->events_completed, 1u);
  EXPECT_STREQ(ibv_event_type_str(IBV_EVENT_DEVICE_FATAL), "local catastrophic error");
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
  p.Teardown();
}

TEST_F(ShimTest, SrqAttributes) {
  ibv_context* ctx = Open();
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  int tag = 0;
  ibv_srq_init_attr si{};
  si.srq_context = &tag;
  si.attr.max_wr = 5;
  si.attr.max_sge = 2;
  si.attr.srq_limit = 3;  // irrelevant to ibv_create_srq: not armed
  ibv_srq* srq = ibv_create_srq(pd, &si);
  ASSERT_NE(srq, nullptr);
  EXPECT_EQ(si.attr.max_wr, 8u);  // granted: the fake daemon gives its whole ring
  EXPECT_EQ(si.attr.max_sge, 2u);
  EXPECT_EQ(srq->context, ctx);
  EXPECT_EQ(srq->pd, pd);
  EXPECT_EQ(srq->srq_context, &tag);
  EXPECT_NE(srq->handle, 0u);
  EXPECT_EQ(srq->events_completed, 0u);
  ibv_srq_attr qa{};
  ASSERT_EQ(ibv_query_srq(srq, &qa), 0);
  EXPECT_EQ(qa.max_wr, 8u);
  EXPECT_EQ(qa.max_sge, 2u);
  EXPECT_EQ(qa.srq_limit, 0u);

  ibv_srq_attr ma{};
  ma.srq_limit = 3;
  ASSERT_EQ(ibv_modify_srq(srq, &ma, IBV_SRQ_LIMIT), 0);
  ASSERT_EQ(ibv_query_srq(srq, &qa), 0);
  EXPECT_EQ(qa.srq_limit, 3u);
  ma.srq_limit = 8;  // max_wr itself is a limit
  ASSERT_EQ(ibv_modify_srq(srq, &ma, IBV_SRQ_LIMIT), 0);
  ma.srq_limit = 9;
  EXPECT_EQ(ibv_modify_srq(srq, &ma, IBV_SRQ_LIMIT), EINVAL);
  ma.max_wr = 16;  // resizing
  ma.srq_limit = 1;
  EXPECT_EQ(ibv_modify_srq(srq, &ma, IBV_SRQ_MAX_WR), EOPNOTSUPP);
  EXPECT_EQ(ibv_modify_srq(srq, &ma, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), EOPNOTSUPP);
  EXPECT_EQ(ibv_modify_srq(srq, &ma, IBV_SRQ_LIMIT | (1 << 2)), EINVAL);
  // None of the refused ones reached the daemon.
  ASSERT_EQ(ibv_query_srq(srq, &qa), 0);
  EXPECT_EQ(qa.max_wr, 8u);
  EXPECT_EQ(qa.srq_limit, 8u);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST_F(ShimTest, SrqBadAttributes) {
  ibv_context* ctx = Open();
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  // The fake daemon's max_qp_wr is 4096, max_sge 16.
  const ibv_srq_attr bad[] = {{0, 1, 0}, {4097, 1, 0}, {4, 0, 0}, {4, 17, 0}};
  for (const ibv_srq_attr& a : bad) {
    ibv_srq_init_attr si{};
    si.attr = a;
    errno = 0;
    EXPECT_EQ(ibv_create_srq(pd, &si), nullptr) << a.max_wr << " WRs, " << a.max_sge << " SGEs";
    EXPECT_EQ(errno, EINVAL);
  }
  ibv_srq_init_attr si{};
  si.attr = {4096, 16, 0};
  ibv_srq* srq = ibv_create_srq(pd, &si);
  ASSERT_NE(srq, nullptr);

  // A QP on an SRQ of another context, with the same handle there: only the
  // shim can tell them apart.
  ibv_context* other = Open();
  ASSERT_NE(other, nullptr);
  ibv_pd* other_pd = ibv_alloc_pd(other);
  ibv_cq* other_cq = ibv_create_cq(other, 16, nullptr, nullptr, 0);
  ibv_srq* other_srq = ibv_create_srq(other_pd, &si);
  ASSERT_NE(other_srq, nullptr);
  ASSERT_EQ(other_srq->handle, srq->handle);
  ibv_qp_init_attr qi{};
  qi.send_cq = qi.recv_cq = cq;
  qi.cap.max_send_wr = 1;
  qi.cap.max_recv_wr = 16;
  qi.cap.max_recv_sge = 2;
  qi.qp_type = IBV_QPT_RC;
  qi.srq = other_srq;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd, &qi), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // On its own context's SRQ: the QP's receive caps are written back as none.
  qi.srq = srq;
  ibv_qp* qp = ibv_create_qp(pd, &qi);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qi.cap.max_recv_wr, 0u);
  EXPECT_EQ(qi.cap.max_recv_sge, 0u);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_srq(other_srq), 0);
  EXPECT_EQ(ibv_destroy_cq(other_cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(other_pd), 0);
  EXPECT_EQ(ibv_close_device(other), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST_F(ShimTest, SrqReceives) {
  Pair p;
  ASSERT_TRUE(p.Setup(Open(), 64, false, 4));
  EXPECT_EQ(p.b->srq, p.srq);
  ibv_qp_attr qa;
  ibv_qp_init_attr qi;
  ASSERT_EQ(ibv_query_qp(p.b, &qa, IBV_QP_CAP, &qi), 0);
  EXPECT_EQ(qi.srq, p.srq);
  EXPECT_EQ(qi.cap.max_recv_wr, 0u);
  EXPECT_EQ(qa.cap.max_recv_wr, 0u);
  EXPECT_EQ(qa.cap.max_recv_sge, 0u);
  ASSERT_EQ(ibv_query_qp(p.a, &qa, IBV_QP_CAP, &qi), 0);
  EXPECT_EQ(qi.srq, nullptr);
  EXPECT_EQ(qa.cap.max_recv_wr, 16u);

  // A QP on an SRQ has no receive queue of its own.
  constexpr uint32_t kLen = 256;
  ibv_sge sge[8];
  ibv_recv_wr w[8];
  for (int i = 0; i < 8; i++) w[i] = p.Recv(100 + i, i * kLen, kLen, &sge[i]);
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_recv(p.b, &w[0], &bad), EINVAL);
  EXPECT_EQ(bad, &w[0]);
  ibv_recv_wr no_sge{};  // not refused for its SGEs
  bad = nullptr;
  EXPECT_EQ(ibv_post_recv(p.b, &no_sge, &bad), EINVAL);
  EXPECT_EQ(bad, &no_sge);
  // More SGEs than the SRQ's max_sge (2).
  ibv_sge three[3] = {sge[0], sge[0], sge[0]};
  ibv_recv_wr wide = w[0];
  wide.sg_list = three;
  wide.num_sge = 3;
  bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(p.srq, &wide, &bad), EINVAL);
  EXPECT_EQ(bad, &wide);

  // The ring holds 4: a chain of 5 posts 4 and stops at the 5th.
  for (int i = 0; i < 4; i++) w[i].next = &w[i + 1];
  bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(p.srq, &w[0], &bad), ENOMEM);
  EXPECT_EQ(bad, &w[4]);
  w[4].next = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(p.srq, &w[4], &bad), ENOMEM);

  // Two SENDs to b take the first two receives, in order, with their wr_id.
  ibv_sge ssge[2];
  ibv_send_wr s0 = p.Send(1, 1000, 100, &ssge[0]);
  ibv_send_wr s1 = p.Send(2, 2000, 200, &ssge[1]);
  s0.next = &s1;
  ibv_send_wr* sbad = nullptr;
  ASSERT_EQ(ibv_post_send(p.a, &s0, &sbad), 0);
  for (int k = 0; k < 2; k++) {
    ibv_wc wc;
    ASSERT_TRUE(p.PollFor(IBV_WC_RECV, &wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.wr_id, 100u + k);
    EXPECT_EQ(wc.qp_num, p.b->qp_num);
    EXPECT_EQ(wc.byte_len, 100u * (k + 1));
    EXPECT_EQ(memcmp(p.dst.data() + k * kLen, p.src.data() + 1000 * (k + 1), 100 * (k + 1)), 0);
  }
  // Their slots are free again: two more fit, not three.
  w[4].next = &w[5];
  w[5].next = &w[6];
  bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(p.srq, &w[4], &bad), ENOMEM);
  EXPECT_EQ(bad, &w[6]);

  // The SRQ outlives the QPs that use it.
  EXPECT_EQ(ibv_destroy_srq(p.srq), EBUSY);
  EXPECT_EQ(ibv_destroy_qp(p.b), 0);
  p.b = nullptr;
  EXPECT_EQ(ibv_destroy_srq(p.srq), 0);
  p.srq = nullptr;
  p.Teardown();
}

TEST_F(ShimTest, SrqLimitEvent) {
  Pair p;
  ASSERT_TRUE(p.Setup(Open(), 64, false, 4));
  fcntl(p.ctx->async_fd, F_SETFL, fcntl(p.ctx->async_fd, F_GETFL) | O_NONBLOCK);
  ibv_sge sge[5];
  ibv_recv_wr w[5];
  for (int i = 0; i < 5; i++) w[i] = p.Recv(i, i * 64, 64, &sge[i]);
  for (int i = 0; i < 3; i++) w[i].next = &w[i + 1];
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_srq_recv(p.srq, &w[0], &bad), 0);
  ibv_srq_attr sa{};
  sa.srq_limit = 4;
  ASSERT_EQ(ibv_modify_srq(p.srq, &sa, IBV_SRQ_LIMIT), 0);
  ibv_async_event ev;
  errno = 0;
  EXPECT_EQ(ibv_get_async_event(p.ctx, &ev), -1);  // 4 held: not below the limit
  EXPECT_EQ(errno, EAGAIN);

  // One SEND leaves 3: the fake daemon raises the event before the completion.
  ibv_sge ssge;
  ibv_send_wr s = p.Send(9, 0, 16, &ssge);
  ibv_send_wr* sbad = nullptr;
  ASSERT_EQ(ibv_post_send(p.a, &s, &sbad), 0);
  ibv_wc wc;
  ASSERT_TRUE(p.PollFor(IBV_WC_RECV, &wc));
  ASSERT_EQ(ibv_get_async_event(p.ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev.element.srq, p.srq);
  ibv_ack_async_event(&ev);
  EXPECT_EQ(p.srq->events_completed, 1u);
  ASSERT_EQ(ibv_query_srq(p.srq, &sa), 0);
  EXPECT_EQ(sa.srq_limit, 0u);  // fired: disarmed

  // An event for an SRQ destroyed since is dropped.
  w[3].next = nullptr;
  ASSERT_EQ(ibv_post_srq_recv(p.srq, &w[4], &bad), 0);
  sa.srq_limit = 4;
  ASSERT_EQ(ibv_modify_srq(p.srq, &sa, IBV_SRQ_LIMIT), 0);
  ASSERT_EQ(ibv_post_send(p.a, &s, &sbad), 0);
  ASSERT_TRUE(p.PollFor(IBV_WC_RECV, &wc));
  EXPECT_EQ(ibv_destroy_qp(p.b), 0);
  p.b = nullptr;
  EXPECT_EQ(ibv_destroy_srq(p.srq), 0);
  p.srq = nullptr;
  errno = 0;
  EXPECT_EQ(ibv_get_async_event(p.ctx, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
  p.Teardown();
}

TEST_F(ShimTest, DaemonDeath) {
  Pair p;
  ASSERT_TRUE(p.Setup(Open(), 64, false, 4));
  KillDaemon();
  ibv_wc wc;
  int r = 0;
  for (int i = 0; i < 10000 && r == 0; i++) r = ibv_poll_cq(p.cq, 1, &wc);
  EXPECT_EQ(r, -1);
  ibv_async_event ev;
  ASSERT_EQ(ibv_get_async_event(p.ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_DEVICE_FATAL);
  ibv_ack_async_event(&ev);
  ibv_sge sge;
  ibv_send_wr wr = p.Write(1, 8, &sge);
  ibv_send_wr* bad;
  EXPECT_EQ(ibv_post_send(p.a, &wr, &bad), EIO);
  ibv_sge rsge;
  ibv_recv_wr rwr = p.Recv(1, 0, 8, &rsge);
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(p.srq, &rwr, &rbad), EIO);
  EXPECT_EQ(rbad, &rwr);
  ibv_cq* ev_cq;
  void* ev_ctx;
  EXPECT_EQ(ibv_get_cq_event(p.ch, &ev_cq, &ev_ctx), -1);
  // Teardown still works and frees everything.
  p.Teardown();
}

}  // namespace
