//! Linux AF_XDP transmit queues on raw libc: UMEM, rings, bind modes
