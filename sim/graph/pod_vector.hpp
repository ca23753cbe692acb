// A growable array of trivially copyable values for the task graph's largest arrays (tens of millions
// of tasks and dependencies when every rank is simulated). It grows with realloc(), which for a large
// block remaps its pages instead of copying them: building the array touches its memory once, where a
// std::vector touches every block it outgrows too. Views are std::span.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace dtsim::graph {

template <typename T>
class PodVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  PodVector() = default;
  PodVector(const PodVector& other) { *this = other; }
  PodVector(PodVector&& other) noexcept { swap(other); }
  PodVector& operator=(const PodVector& other) {
    if (this != &other) {
      clear();
      reserve(other.size_);
      if (other.size_ > 0) std::memcpy(data_, other.data_, other.size_ * sizeof(T));
      size_ = other.size_;
    }
    return *this;
  }
  PodVector& operator=(PodVector&& other) noexcept {
    PodVector moved(static_cast<PodVector&&>(other));
    swap(moved);
    return *this;
  }
  ~PodVector() { std::free(data_); }

  void push_back(const T& value) {
    if (size_ == capacity_) [[unlikely]]
      grow(capacity_ < 16 ? 16 : 2 * capacity_);
    data_[size_++] = value;
  }
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }
  void clear() { size_ = 0; }
  // Gives the memory back.
  void release() {
    std::free(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::span<const T> view() const { return {data_, size_}; }

 private:
  void grow(std::size_t capacity) {
    void* p = std::realloc(data_, capacity * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = capacity;
  }
  void swap(PodVector& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace dtsim::graph
