//! Stream specs, their validation, and compilation into a Plan
